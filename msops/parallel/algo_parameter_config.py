"""set_algo_parameters / get_algo_parameters / reset_algo_parameters (MindSpore's
parallel.algo_parameter_config): the knobs of auto_parallel's strategy search that
msops's search (msops.parallel.propagation) has a counterpart for.

* `fully_use_devices` (default True): candidate strategies are those using every device
  (the product of the splits is the device count); an op with no such strategy (a
  scalar, a dim too short) keeps its others.
* `elementwise_op_strategy_follow` (default False): after the search, each element-wise
  op takes the strategy giving its first consumer's input layout.

MindSpore's other keys tune what msops's search does not have: `tensor_slice_align_enable`
/ `tensor_slice_align_size` bound MatMul's slice shapes inside MindSpore's cost model (msops
prices every op alike, by bytes sent and held), `enable_algo_approxi` /
`algo_approxi_epsilon` prune its dynamic programming (msops's search enumerates each op's
candidates exactly). Setting or reading them is a ValueError saying so, not a silent no-op.
The values live in the auto-parallel context (a change recompiles; reset_auto_parallel_context
restores the defaults too).
"""
from __future__ import annotations

from typing import Any

from msops.parallel import context as pctx

__all__ = ["set_algo_parameters", "get_algo_parameters", "reset_algo_parameters",
           "algo_parameter"]

_DEFAULTS = {"fully_use_devices": True, "elementwise_op_strategy_follow": False}
_NO_COUNTERPART = {
    "tensor_slice_align_enable": "MatMul slice alignment is a term of MindSpore's cost "
                                 "model; msops's search prices every op by bytes sent and held",
    "tensor_slice_align_size": "MatMul slice alignment is a term of MindSpore's cost model; "
                               "msops's search prices every op by bytes sent and held",
    "enable_algo_approxi": "it prunes MindSpore's dynamic programming; msops's search "
                           "enumerates each op's candidates exactly",
    "algo_approxi_epsilon": "it prunes MindSpore's dynamic programming; msops's search "
                            "enumerates each op's candidates exactly"}
_KEY = "algo_parameters"


def _check_key(api: str, key: Any) -> str:
    if key in _NO_COUNTERPART:
        raise ValueError(f"For '{api}', the key '{key}' has no counterpart in msops's "
                         f"strategy search ({_NO_COUNTERPART[key]}); the keys it has are "
                         f"{sorted(_DEFAULTS)}.")
    if key not in _DEFAULTS:
        raise ValueError(f"For '{api}', the key should be one of {sorted(_DEFAULTS)}, but got "
                         f"{key!r}.")
    return key


def algo_parameter(key: str) -> Any:
    """The value of one algo parameter (for the search)."""
    return dict(pctx.internal(_KEY, ()) or ()).get(key, _DEFAULTS[key])


def set_algo_parameters(**kwargs: Any) -> None:
    """Set algo parameters, e.g. `set_algo_parameters(fully_use_devices=False)`; all
    checked before any is set. Each is a bool."""
    api = "set_algo_parameters"
    for key, value in kwargs.items():
        _check_key(api, key)
        if not isinstance(value, bool):
            raise TypeError(f"For '{api}', the '{key}' should be a bool, but got "
                            f"{type(value).__name__}.")
    values = {k: algo_parameter(k) for k in _DEFAULTS}
    values.update(kwargs)
    pctx.set_internal(_KEY, tuple(sorted(values.items())))


def get_algo_parameters(attr_key: str) -> Any:
    """The value of the algo parameter `attr_key`."""
    return algo_parameter(_check_key("get_algo_parameters", attr_key))


def reset_algo_parameters() -> None:
    """Every algo parameter back to its default."""
    pctx.set_internal(_KEY, ())
