"""The one exception family of the package.

Every error a user can cause (a bad file, a bad option) is a :class:`PlacementError`
whose message is one line naming the file, the node/edge/field and the rule broken.
"Infeasible" is never an exception: it is a result status.
"""


class PlacementError(Exception):
    """Base class of every error raised by :mod:`placement`."""


class InvalidGraphError(PlacementError, ValueError):
    """A graph file or graph object breaks a rule of the model."""


class InvalidSplitError(PlacementError, ValueError):
    """A split (placement) file or object does not fit its graph."""


class InvalidDevicesError(PlacementError, ValueError):
    """A device inventory is malformed (negative counts, bad memory, ...)."""


class TooManyIdealsError(PlacementError):
    """The graph has more ideals than the DP may enumerate within its limit."""


class SolverError(PlacementError):
    """An integer-programming solver failed or is unavailable."""


class ExportError(PlacementError):
    """A plan that a runtime configuration (Megatron-LM, torch, DeepSpeed) cannot express."""


class InvalidScenarioError(PlacementError, ValueError):
    """A scenario (URL query parameters or a scenario card) is malformed."""


class InvalidLayoutError(PlacementError, ValueError):
    """A parallel layout (or a Megatron-LM command line) breaks a rule of the training performance model."""


class InvalidModelSpecError(PlacementError, ValueError):
    """A transformer specification is malformed (non-positive sizes, heads not dividing the hidden size, ...)."""
