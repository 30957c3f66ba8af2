"""One exception type for everything the user can fix (bad model, bad order, bad board), and the
exit codes the command line documents."""

EXIT_ERROR = 2  # bad input, unsupported construct, tool missing: one line on stderr
EXIT_DOES_NOT_FIT = 3  # the model does not fit the board (build, build --no-compile, report)


class TinyschedError(Exception):
    """An error in the user's input or environment, reported as one line and exit code 2."""

    exit_code = EXIT_ERROR
