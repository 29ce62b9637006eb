"""Python client for the dialscore service: `Client(base_url).score(...)`, `.rerank(...)`, `.correlate(...)`,
`.human_eval(...)`; every failure is a `DialscoreError` carrying the contract's code, message and details."""
from dialscore_client.client import DEFAULT_TIMEOUT, Client
from dialscore_client.errors import (DeadlineExceeded, DialscoreError, InvalidRequest, NotFound, NotReady,
                                     Overloaded, ServerError, ShuttingDown, TooLarge, TransportError, Unauthorized,
                                     Unavailable, UnknownModel)
from dialscore_client.results import (Agreement, Comparison, ComponentInfo, Correlation, CorrelationReport, Dialogue,
                                      HumanEvalReport, Item, ModelInfo, MultiScoreResult, RankedCandidate, Ranking,
                                      RaterCheck, Rating, ReplyWarning, ScoreResult, ServedModels,
                                      SystemSummary, Turn)
from dialscore_client.version import __version__

__all__ = [
    "DEFAULT_TIMEOUT", "Agreement", "Client", "Comparison", "ComponentInfo", "Correlation", "CorrelationReport", "DeadlineExceeded", "Dialogue",
    "DialscoreError", "HumanEvalReport", "InvalidRequest", "Item", "ModelInfo", "MultiScoreResult", "NotFound",
    "NotReady", "Overloaded", "RankedCandidate", "Ranking", "RaterCheck", "Rating", "ReplyWarning", "ScoreResult", "ServedModels",
    "ServerError", "ShuttingDown", "SystemSummary", "TooLarge", "TransportError", "Turn", "Unauthorized",
    "Unavailable", "UnknownModel", "__version__",
]
