"""Python client for the dialscore service: `Client(base_url).score(...)`, `.rerank(...)`, `.correlate(...)`,
`.human_eval(...)`; every failure is a `DialscoreError` carrying the contract's code, message and details."""
from dialscore_client.client import Client
from dialscore_client.errors import (DialscoreError, InvalidRequest, NotFound, NotReady, ServerError, TooLarge,
                                     TransportError, Unauthorized, UnknownModel)
from dialscore_client.results import (Agreement, Comparison, Correlation, CorrelationReport, Dialogue,
                                      HumanEvalReport, Item, ModelInfo, MultiScoreResult, RankedCandidate, Ranking,
                                      RaterCheck, Rating, ScoreResult, ServedModels, SystemSummary, Turn)
from dialscore_client.version import __version__

__all__ = [
    "Agreement", "Client", "Comparison", "Correlation", "CorrelationReport", "Dialogue", "DialscoreError",
    "HumanEvalReport", "InvalidRequest", "Item", "ModelInfo", "MultiScoreResult", "NotFound", "NotReady",
    "RankedCandidate", "Ranking", "RaterCheck", "Rating", "ScoreResult", "ServedModels", "ServerError",
    "SystemSummary", "TooLarge", "TransportError", "Turn", "Unauthorized", "UnknownModel", "__version__",
]
