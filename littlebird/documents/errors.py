"""The one exception the UI shows to the user as it is."""


class DocumentError(ValueError):
    """A document could not be read, fetched or cleaned.

    ``str(error)`` is a complete sentence meant for the user, saying what went wrong and,
    where possible, what to do instead.
    """
