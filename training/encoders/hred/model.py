"""VHRED (Serban et al. 2017) as ADEM pre-trains it: the hierarchical encoder plus a latent decoder.

Only the two encoders are exported (`UtteranceEncoder`, `ContextEncoder`); the context encoder's last
state is the vector of a context or, fed one utterance, of a reply (ADEM section 4)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from training.core.bigru import BiGRU, gather_time
from training.core.checkpoint import save_atomically
from training.core.cli import SetupError
from training.encoders.hred.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID


@dataclass
class VHREDConfig:
    vocab_size: int = 5000
    embedding: int = 128     # word (BPE piece) embedding size
    utterance: int = 128     # per direction: utterance vectors are 2 * utterance wide
    context: int = 256       # context-level GRU: the size of c, r and r_hat
    latent: int = 64         # Gaussian latent variable per turn
    decoder: int = 256
    max_tokens: int = 40     # per utterance, [EOS] included (also in tokenizer.json)
    max_turns: int = 8       # turns per training window; the service keeps the last max_turns - 1 as context
    word_drop: float = 0.25  # decoder inputs replaced by [UNK] (ADEM 5.1: 25%)

    def __post_init__(self) -> None:
        """Refuse sizes no model can use: `max_turns` 1 made pre-training's windowing loop forever
        (a window must hold a context turn and the turn it predicts), and a size of 0 failed deep in
        torch after the corpora had loaded. Raises ValueError naming the field."""
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.name == "word_drop":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                    raise ValueError(f"word_drop must be a number in [0, 1), not {value!r}")
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{spec.name} must be a whole number, not {value!r}")
            low = 2 if spec.name in ("max_turns", "max_tokens") else 1
            if value < low:
                raise ValueError(f"{spec.name} must be {low} or more, not {value}")

    def to_dict(self) -> dict:
        return asdict(self)


class UtteranceEncoder(nn.Module):
    """tokens [N, L] int64 (0-padded), lengths [N] -> utterance vectors [N, 2 * utterance]."""

    def __init__(self, config: VHREDConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.embedding, padding_idx=PAD_ID)
        self.rnn = BiGRU(config.embedding, config.utterance)
        self.norm = nn.LayerNorm(2 * config.utterance)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.norm(self.rnn(self.embed(tokens), lengths))


class ContextEncoder(nn.Module):
    """utterance vectors [B, T, U] (padded turns last), turns [B] -> every state [B, T, C] and the last [B, C]."""

    def __init__(self, config: VHREDConfig) -> None:
        super().__init__()
        self.rnn = nn.GRU(2 * config.utterance, config.context, batch_first=True)
        self.norm = nn.LayerNorm(config.context)

    def states(self, vectors: torch.Tensor) -> torch.Tensor:
        outputs, _ = self.rnn(vectors)
        return self.norm(outputs)

    def forward(self, vectors: torch.Tensor, turns: torch.Tensor) -> torch.Tensor:
        return gather_time(self.states(vectors), turns - 1)


class VHRED(nn.Module):
    def __init__(self, config: VHREDConfig) -> None:
        super().__init__()
        self.config = config
        self.utterance_encoder = UtteranceEncoder(config)
        self.context_encoder = ContextEncoder(config)
        c, u, z = config.context, 2 * config.utterance, config.latent
        self.prior = nn.Sequential(nn.Linear(c, c), nn.Tanh(), nn.Linear(c, 2 * z))
        self.posterior = nn.Sequential(nn.Linear(c + u, c), nn.Tanh(), nn.Linear(c, 2 * z))
        self.decoder_init = nn.Sequential(nn.Linear(c + z, config.decoder), nn.Tanh())
        self.decoder = nn.GRU(config.embedding, config.decoder, batch_first=True)
        # Output through a projection to the embedding size and the (tied) embedding matrix: the
        # vocabulary softmax dominates the cost on one CPU core, and tying halves it.
        self.output_projection = nn.Linear(config.decoder, config.embedding)
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))

    # --- pieces -------------------------------------------------------------------------------
    def encode_dialogues(self, tokens: torch.Tensor, lengths: torch.Tensor, turns: torch.Tensor,
                         ) -> tuple[torch.Tensor, torch.Tensor]:
        """tokens [B, T, L], lengths [B, T] (0 for padded turns), turns [B] -> (utterance vectors, context states)."""
        b, t, l = tokens.shape
        flat_lengths = lengths.reshape(-1)
        real = flat_lengths > 0
        vectors = tokens.new_zeros((b * t, 2 * self.config.utterance), dtype=torch.float)
        vectors[real] = self.utterance_encoder(tokens.reshape(b * t, l)[real], flat_lengths[real])
        vectors = vectors.view(b, t, -1)
        return vectors, self.context_encoder.states(vectors)

    @staticmethod
    def _gaussian(params: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, logvar = params.chunk(2, dim=-1)
        return mean, logvar.clamp(-8.0, 8.0)

    def decode_logits(self, inputs: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits [N, L, V] for decoder inputs [N, L] given [context; z] conditions [N, C+Z]."""
        hidden = self.decoder_init(condition).unsqueeze(0)
        outputs, _ = self.decoder(self.utterance_encoder.embed(inputs), hidden)
        return self.output(outputs)

    def output(self, states: torch.Tensor) -> torch.Tensor:
        return F.linear(self.output_projection(states), self.utterance_encoder.embed.weight, self.output_bias)

    # --- training -----------------------------------------------------------------------------
    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor, turns: torch.Tensor,
                kl_weight: float = 1.0, sample: bool = True) -> dict[str, torch.Tensor]:
        """Summed reconstruction NLL and KL over every turn n >= 1 of a padded batch of dialogues."""
        vectors, states = self.encode_dialogues(tokens, lengths, turns)
        b, t, l = tokens.shape
        # Turn n (n >= 1) is predicted from the context state after turn n - 1.
        target_mask = lengths[:, 1:] > 0                                 # [B, T-1]
        previous = states[:, :-1][target_mask]                           # [N, C]
        current = vectors[:, 1:][target_mask]                            # [N, U]
        targets = tokens[:, 1:][target_mask]                             # [N, L] ends in [EOS]
        prior_mean, prior_logvar = self._gaussian(self.prior(previous))
        post_mean, post_logvar = self._gaussian(self.posterior(torch.cat([previous, current], -1)))
        if sample:
            z = post_mean + torch.randn_like(post_mean) * torch.exp(0.5 * post_logvar)
        else:
            z = post_mean
        kl = 0.5 * (prior_logvar - post_logvar
                    + (torch.exp(post_logvar) + (post_mean - prior_mean) ** 2) / torch.exp(prior_logvar) - 1.0)
        inputs = torch.cat([torch.full_like(targets[:, :1], BOS_ID), targets[:, :-1]], dim=1)
        if self.training and self.config.word_drop > 0:
            drop = (torch.rand(inputs.shape) < self.config.word_drop) & (inputs != PAD_ID)
            drop[:, 0] = False
            inputs = torch.where(drop, torch.full_like(inputs, UNK_ID), inputs)
        logits = self.decode_logits(inputs, torch.cat([previous, z], -1))
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                              ignore_index=PAD_ID, reduction="sum")
        n_tokens = (targets != PAD_ID).sum()
        kl_sum = kl.sum()
        loss = (nll + kl_weight * kl_sum) / n_tokens.clamp(min=1)
        return {"loss": loss, "nll": nll.detach(), "kl": kl_sum.detach(), "tokens": n_tokens.detach()}

    # --- generation (selftalk) ----------------------------------------------------------------
    @torch.no_grad()
    def generate(self, context_state: torch.Tensor, max_tokens: int, temperature: float = 1.0,
                 top_k: int = 0, generator: torch.Generator | None = None) -> list[list[int]]:
        """Sample one reply per context state [N, C]: z from the prior, then tokens until [EOS]."""
        mean, logvar = self._gaussian(self.prior(context_state))
        z = mean + torch.randn(mean.shape, generator=generator) * torch.exp(0.5 * logvar)
        hidden = self.decoder_init(torch.cat([context_state, z], -1)).unsqueeze(0)
        n = context_state.shape[0]
        token = torch.full((n, 1), BOS_ID, dtype=torch.long)
        out: list[list[int]] = [[] for _ in range(n)]
        done = torch.zeros(n, dtype=torch.bool)
        for _ in range(max_tokens):
            output, hidden = self.decoder(self.utterance_encoder.embed(token), hidden)
            logits = self.output(output[:, -1]) / max(temperature, 1e-5)
            logits[:, PAD_ID] = -1e9
            logits[:, UNK_ID] = -1e9
            logits[:, BOS_ID] = -1e9
            if top_k:
                threshold = logits.topk(top_k, dim=-1).values[:, -1:]
                logits = logits.masked_fill(logits < threshold, -1e9)
            token = torch.multinomial(F.softmax(logits, -1), 1, generator=generator)
            for i in range(n):
                if not done[i]:
                    if token[i, 0].item() == EOS_ID:
                        done[i] = True
                    else:
                        out[i].append(int(token[i, 0]))
            if bool(done.all()):
                break
        return out


def save_checkpoint(model: VHRED, path, extra: dict | None = None) -> None:
    """The checkpoint carries its config, so export and fine-tuning rebuild the same model. Written
    beside and moved into place: a kill during the save left a cut-short file instead of the last
    good checkpoint."""
    save_atomically({"config": model.config.to_dict(), "state": model.state_dict(), "extra": extra or {}}, path)


def weights_sha256(model: nn.Module) -> str:
    """sha256 of a model's weights (names and bytes, in name order): what tells two pre-training
    runs apart when their corpus, steps and seed agree but an lr, a batch size or a size differed."""
    import hashlib

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def load_finished(folder: Path) -> tuple[VHRED, dict]:
    """A run's model.pt, refused while it is a step checkpoint of an unfinished run (a head trained on
    it would be refused at export only after all its training)."""
    model, extra = load_checkpoint(Path(folder) / "model.pt")
    if "steps_done" in extra:
        raise SetupError(f"{folder}: model.pt is a checkpoint of an unfinished pre-training run (stopped after step "
                         f"{extra['steps_done']}); finish it with `python -m training pretrain --finish` and the "
                         "run's own options, or run it again")
    return model, extra


def load_checkpoint(path) -> tuple[VHRED, dict]:
    """The model and the `extra` it was saved with. A file that is not a VHRED checkpoint (cut
    short, another model's, not a checkpoint at all) is a SetupError naming it: every command that
    loads one showed a torch traceback instead. A missing file stays an OSError."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
        model = VHRED(VHREDConfig(**payload["config"]))
        model.load_state_dict(payload["state"])
    except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError):
        raise
    except Exception as exc:  # torch raises RuntimeError, UnpicklingError, EOFError, OSError (cut short)... for a bad file
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SetupError(f"{path} is not a readable VHRED checkpoint ({type(exc).__name__}: {detail[:200]})") from exc
    model.eval()
    extra = payload.get("extra", {}) if isinstance(payload, dict) else {}
    return model, extra if isinstance(extra, dict) else {}
