"""The Transformer layers, as `mindspore.nn`: TransformerEncoderLayer, TransformerDecoderLayer,
TransformerEncoder, TransformerDecoder and Transformer, built from MultiheadAttention, Dense,
LayerNorm and Dropout (MindSpore's arguments, sub-cell names and residual orders).

post-norm (norm_first=False): x = norm(x + block(x)); pre-norm: x = x + block(norm(x)).
"""
from __future__ import annotations

import math
from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.initializer import HeUniform, Uniform
from msops.common.tensor import check_tensor
from msops.nn.activation import GELU
from msops.nn.attention import MultiheadAttention, check_dropout, check_float_dtype
from msops.nn.cell import Cell
from msops.nn.containers import CellList
from msops.nn.initializer import initializer
from msops.nn.layers import Dense, Dropout, ReLU
from msops.nn.normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerDecoder", "Transformer"]


def _activation_cell(activation: Any, name: str) -> Cell:
    """MindSpore's choices: "relu" / ops.relu / an nn.ReLU, "gelu" / ops.gelu (exact) / an
    nn.GELU; as a layer, so its primitives trace and shard like the rest."""
    if isinstance(activation, (ReLU, GELU)):
        return activation
    if activation is ops.relu or (isinstance(activation, str) and activation == "relu"):
        return ReLU()
    if activation is ops.gelu or (isinstance(activation, str) and activation == "gelu"):
        return GELU(approximate=False)
    raise ValueError(f"For '{name}', the 'activation' should be 'relu', 'gelu', ops.relu, "
                     f"ops.gelu or an nn.ReLU or nn.GELU instance, but got {activation!r}.")


class _TransformerLayer(Cell):
    """What the encoder and decoder layers share: arguments, the feed-forward block
    (dense1 -> activation -> dropout -> dense2 -> dropout<last>), norms and dropouts."""

    n_blocks = 2

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False,
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.d_model = validator.check_positive_int(d_model, "d_model", name)
        self.nhead = validator.check_positive_int(nhead, "nhead", name)
        self.dim_feedforward = validator.check_positive_int(dim_feedforward, "dim_feedforward",
                                                            name)
        self.dropout_num = check_dropout(dropout, name)
        self.layernorm_eps = validator.check_value_type("layer_norm_eps", layer_norm_eps,
                                                        (int, float), name)
        self.batch_first = validator.check_bool("batch_first", batch_first, name)
        self.norm_first = validator.check_bool("norm_first", norm_first, name)
        self.dtype = check_float_dtype(dtype, name)
        self.activation1 = activation                   # as given: TransformerEncoder copies it
        self.activation = _activation_cell(activation, name)
        if d_model % nhead:
            raise ValueError(f"For '{name}', the 'd_model' should be divisible by 'nhead': "
                             f"{nhead}, but got {d_model}.")
        self._make_attention()
        self.dense1 = Dense(d_model, dim_feedforward, weight_init=HeUniform(math.sqrt(5)),
                            bias_init=Uniform(1 / math.sqrt(d_model)), dtype=dtype)
        self.dense2 = Dense(dim_feedforward, d_model, weight_init=HeUniform(math.sqrt(5)),
                            bias_init=Uniform(1 / math.sqrt(dim_feedforward)), dtype=dtype)
        self.dropout = Dropout(p=self.dropout_num)
        for i in range(1, self.n_blocks + 1):
            setattr(self, f"norm{i}", LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype))
            setattr(self, f"dropout{i}", Dropout(p=self.dropout_num))
        self.residual = ops.Add()

    def _make_attention(self) -> None:
        self.self_attn = self._attention()

    def _attention(self) -> MultiheadAttention:
        return MultiheadAttention(self.d_model, self.nhead, dropout=self.dropout_num,
                                  batch_first=self.batch_first, dtype=self.dtype)

    def _check_input(self, arg: str, x) -> None:
        check_tensor(self.cls_name, arg, x)
        if x.ndim not in (2, 3) or x.shape[-1] != self.d_model:
            raise ValueError(f"For '{self.cls_name}', the '{arg}' should be (S, N, E), (N, S, "
                             f"E) or (S, E) with E = d_model = {self.d_model}, but got shape "
                             f"{list(x.shape)}.")

    def _sublayer(self, x, norm, block):
        """One residual sub-layer in the norm_first or post-norm order."""
        if self.norm_first:
            return self.residual(x, block(norm(x)))
        return norm(self.residual(x, block(x)))

    def _sa_block(self, x, attn_mask, key_padding_mask):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        last = getattr(self, f"dropout{self.n_blocks}")
        return last(self.dense2(self.dropout(self.activation(self.dense1(x)))))

    def _config(self) -> tuple:
        return (self.d_model, self.nhead, self.dim_feedforward, self.dropout_num,
                self.activation1, self.layernorm_eps, self.batch_first, self.norm_first,
                self.dtype)

    def extend_repr(self) -> str:
        return (f"d_model={self.d_model}, nhead={self.nhead}, "
                f"dim_feedforward={self.dim_feedforward}, dropout={self.dropout_num}, "
                f"batch_first={self.batch_first}, norm_first={self.norm_first}")


class TransformerEncoderLayer(_TransformerLayer):
    """`TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1,
    activation='relu', layer_norm_eps=1e-5, batch_first=False, norm_first=False,
    dtype=mstype.float32)`: self-attention then feed-forward, each a residual sub-layer.

    `construct(src, src_mask=None, src_key_padding_mask=None)`: src (S, N, E) ((N, S, E) with
    batch_first, (S, E) unbatched) -> the same shape; the masks are MultiheadAttention's
    attn_mask (S, S) or (N * nhead, S, S) and key_padding_mask (N, S).
    """

    def construct(self, src, src_mask=None, src_key_padding_mask=None):
        self._check_input("src", src)
        x = self._sublayer(src, self.norm1,
                           lambda y: self._sa_block(y, src_mask, src_key_padding_mask))
        return self._sublayer(x, self.norm2, self._ff_block)


class TransformerDecoderLayer(_TransformerLayer):
    """`TransformerDecoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1,
    activation='relu', layer_norm_eps=1e-5, batch_first=False, norm_first=False,
    dtype=mstype.float32)`: self-attention, attention over the encoder's memory
    (`multihead_attn`), then feed-forward, each a residual sub-layer.

    `construct(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None)`: tgt (T, N, E), memory (S, N, E) (batch-first or
    unbatched alike) -> tgt's shape; tgt_mask (T, T) or (N * nhead, T, T), memory_mask
    (T, S) or (N * nhead, T, S), the key padding masks (N, T) and (N, S).
    """

    n_blocks = 3

    def _make_attention(self) -> None:
        self.self_attn = self._attention()
        self.multihead_attn = self._attention()

    def construct(self, tgt, memory, tgt_mask=None, memory_mask=None,
                  tgt_key_padding_mask=None, memory_key_padding_mask=None):
        self._check_input("tgt", tgt)
        self._check_input("memory", memory)
        x = self._sublayer(tgt, self.norm1,
                           lambda y: self._sa_block(y, tgt_mask, tgt_key_padding_mask))
        x = self._sublayer(x, self.norm2, lambda y: self._mha_block(
            y, memory, memory_mask, memory_key_padding_mask))
        return self._sublayer(x, self.norm3, self._ff_block)

    def _mha_block(self, x, memory, attn_mask, key_padding_mask):
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False)[0]
        return self.dropout2(x)


class _Stack(Cell):
    """`num_layers` copies of a layer (its arguments and its current Parameter values, so
    every copy starts equal, as MindSpore's deep copies do) and an optional final norm."""

    layer_type: type = _TransformerLayer
    layer_arg = "layer"

    def __init__(self, layer: Any, num_layers: int, norm: Cell | None = None) -> None:
        super().__init__()
        name = self.cls_name
        if not isinstance(layer, self.layer_type):
            raise TypeError(f"For '{name}', the '{self.layer_arg}' should be a "
                            f"{self.layer_type.__name__}, but got {type(layer).__name__}.")
        self.num_layers = validator.check_positive_int(num_layers, "num_layers", name)
        if norm is not None and not isinstance(norm, Cell):
            raise TypeError(f"For '{name}', the 'norm' should be a Cell or None, but got "
                            f"{type(norm).__name__}.")
        copies = [type(layer)(*layer._config()) for _ in range(num_layers)]
        for copy in copies:
            for p, src in zip(copy.get_parameters(), layer.get_parameters()):
                p.set_data(src.asnumpy())
        self.layers = CellList(copies)
        self.norm = norm

    def _final(self, x):
        return x if self.norm is None else self.norm(x)


class TransformerEncoder(_Stack):
    """`TransformerEncoder(encoder_layer, num_layers, norm=None)`: `num_layers` copies of
    `encoder_layer` applied in turn, then `norm`. `construct(src, src_mask=None,
    src_key_padding_mask=None)` as TransformerEncoderLayer's."""

    layer_type = TransformerEncoderLayer
    layer_arg = "encoder_layer"

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Cell | None = None) -> None:
        super().__init__(encoder_layer, num_layers, norm)

    def construct(self, src, src_mask=None, src_key_padding_mask=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask, src_key_padding_mask)
        return self._final(x)


class TransformerDecoder(_Stack):
    """`TransformerDecoder(decoder_layer, num_layers, norm=None)`: `num_layers` copies of
    `decoder_layer` applied in turn, then `norm`. `construct(tgt, memory, tgt_mask=None,
    memory_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None)` as
    TransformerDecoderLayer's."""

    layer_type = TransformerDecoderLayer
    layer_arg = "decoder_layer"

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Cell | None = None) -> None:
        super().__init__(decoder_layer, num_layers, norm)

    def construct(self, tgt, memory, tgt_mask=None, memory_mask=None,
                  tgt_key_padding_mask=None, memory_key_padding_mask=None):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                      memory_key_padding_mask)
        return self._final(x)


class Transformer(Cell):
    """`Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
    dim_feedforward=2048, dropout=0.1, activation='relu', custom_encoder=None,
    custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
    dtype=mstype.float32)`: an encoder and a decoder (each stack ending in a LayerNorm), every
    Parameter of 2 or more dims drawn again XavierUniform, as MindSpore's.

    `construct(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None)`:
    the decoder's output for tgt attending to the encoded src; tgt's shape.
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Any = "relu", custom_encoder: Cell | None = None,
                 custom_decoder: Cell | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False,
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, dtype)
        if custom_encoder is None:
            custom_encoder = TransformerEncoder(
                TransformerEncoderLayer(*args), num_encoder_layers,
                LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype))
        if custom_decoder is None:
            custom_decoder = TransformerDecoder(
                TransformerDecoderLayer(*args), num_decoder_layers,
                LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype))
        self.encoder, self.decoder = custom_encoder, custom_decoder
        for p in self.get_parameters():
            if p.ndim > 1:
                p.set_data(initializer("xavier_uniform", p.shape, p.dtype))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def construct(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                  src_key_padding_mask=None, tgt_key_padding_mask=None,
                  memory_key_padding_mask=None):
        name = self.cls_name
        if src.ndim == 3 and tgt.ndim == 3:
            axis = 0 if self.batch_first else 1
            if src.shape[axis] != tgt.shape[axis]:
                raise ValueError(f"For '{name}', the batch sizes of 'src' and 'tgt' should be "
                                 f"equal, but got shapes {list(src.shape)} and "
                                 f"{list(tgt.shape)}.")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"For '{name}', the last dim of 'src' and 'tgt' should be d_model "
                             f"= {self.d_model}, but got shapes {list(src.shape)} and "
                             f"{list(tgt.shape)}.")
        memory = self.encoder(src, src_mask, src_key_padding_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                            memory_key_padding_mask)
