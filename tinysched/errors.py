"""One exception type for everything the user can fix (bad model, bad order, bad board)."""


class TinyschedError(Exception):
    """An error in the user's input or environment, reported as one line and exit code 2."""
