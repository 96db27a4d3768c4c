"""The package's exceptions: one base class, one small subclass per kind of failure.

Only ``cli.py`` turns these into exit codes (and, later, only ``web/`` into HTTP errors).
"""


class MarsRAGError(Exception):
    """Base class of every error MarsRAG raises on purpose."""


class ContractVersionError(MarsRAGError, ValueError):
    """A loop_contract_version is malformed or incompatible with the running contract."""


class InputError(MarsRAGError):
    """Input named by the user (a file, a URL, an option) cannot be used."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        #: The parameter at fault (``until``, ``week``), when one is: the API names it in its 422 reason.
        self.field = field


class ConfigError(MarsRAGError, ValueError):
    """A config file cannot be used; the message names the file, the line and the key."""


class StoreError(MarsRAGError):
    """The run store cannot be reached or used (bad URL, database down, failed migration, a failed write)."""


class StoreUnavailableError(StoreError):
    """The store named cannot be opened: a bad URL, an unreachable database, or one that cannot be migrated."""


class QueueUnavailableError(StoreError):
    """The job queue's broker cannot be reached, or no worker finished a job in time."""


class RunNotFoundError(StoreError, LookupError):
    """No run has that id."""


class AmbiguousRunIdError(RunNotFoundError):
    """Several runs have ids starting with that prefix."""


class IncompatibleRecordError(StoreError):
    """A stored record was made under a contract major version this MarsRAG cannot read."""


class TaskNotFoundError(MarsRAGError, LookupError):
    """The run has no task with that id."""


class ActionConflictError(InputError):
    """An operator action does not apply to the task or run in its current state (e.g. repairing a valid task)."""


class HolderLostError(ActionConflictError):
    """A write was refused: its writer no longer holds the run (another process took it over) or the task."""


class AlreadyFollowedError(ActionConflictError):
    """The run's next action was followed already; ``run_id`` is the run that follows it."""

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id
