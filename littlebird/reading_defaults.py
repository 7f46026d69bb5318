"""The reading's defaults that the command line shows in its help, in a module that imports nothing, so that
``littlebird --help`` loads neither torch nor the app. :class:`littlebird.reader.ReadingOptions` says what each
one does."""

DEFAULT_MAX_LENGTH = 1024  # tokens per window
DEFAULT_MAX_WINDOWS = 10  # windows of a long document the model reads at most
DEFAULT_N_BEST = 5  # answers listed
DEFAULT_NO_ANSWER_THRESHOLD = 0.5  # below this answerable probability: "No answer found"
