"""Errors a user can act on.

Every failure that is the user's input or environment (bad interval, unreachable REST URL, stack not
running, Maven missing) is raised as a ChronosError whose message is one line; the CLI prints exactly
that line and exits non-zero, so no traceback ever reaches the user for a known condition.
"""


class ChronosError(Exception):
    """A failure with a one-line message meant for the user."""


class InvalidInput(ChronosError):
    """A value given by the user is malformed or out of range."""


class FlinkUnreachable(ChronosError):
    """The Flink REST endpoint did not answer."""


class FlinkRequestFailed(ChronosError):
    """Flink answered, but refused or failed the request."""


class UnknownJob(ChronosError):
    """No job with that id exists on the cluster."""


class StackError(ChronosError):
    """The local stack cannot be started, found or stopped."""


class ToolMissing(StackError):
    """A program the stack needs (java, mvn) is not installed."""


class KafkaUnavailable(ChronosError):
    """The Kafka broker did not answer."""
