"""What the tests share: `ui` (the tiny served model, local servers, watching readings), `qa` (SQuAD-shaped toy
data and the check that a document's model text links to its shown text), `files` (PDF, Word, Hangul files and
scans made on the fly), `models` (small LittleBird models), `encoders` (toy short encoders to convert),
`training` (toy corpora and recipes) and `fuzz` (the document readers' fuzzing: seeds and mutations)."""
