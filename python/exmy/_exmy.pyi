# Type stubs of the extension exmy._exmy (python/src/exmy_module.cpp). The documented surface
# is the package (python/exmy/__init__.py), which checks arguments before calling these.
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

__version__: str
git_sha: str

def cast(x: npt.NDArray[Any], fmt: str, round: str = "rne", overflow: str = "none",
         seed: int = 0, input: str = "", threads: int = 1,
         compat: str = "") -> npt.NDArray[np.uint8] | npt.NDArray[np.uint16]: ...
def decode(codes: npt.NDArray[Any], fmt: str) -> npt.NDArray[np.float32]: ...
def table(fmt: str) -> npt.NDArray[np.float32]: ...
def quantize(x: npt.NDArray[np.float32], scheme: str, to: str, **kwargs: Any) -> dict[str, Any]: ...
def dequantize(q: dict[str, Any], scheme: str, to: str,
               **kwargs: Any) -> npt.NDArray[np.float32]: ...
def step(optimizer: str, params: npt.NDArray[np.float32], grads: npt.NDArray[np.float32],
         steps: int = 1, param_dtype: str = "fp32", compat: str = "", seed: int = 0,
         block: int = 256, variant: str = "default",
         **kwargs: float | bool) -> dict[str, npt.NDArray[Any]]: ...
def gemm(a: npt.NDArray[Any], b: npt.NDArray[Any], a_format: str, b_format: str,
         out_format: str, accum: str, compat: str, scale_a: float, scale_b: float,
         scale_a_rows: Optional[npt.NDArray[np.float32]],
         scale_b_rows: Optional[npt.NDArray[np.float32]], scale_order: str,
         block_scale_a: Optional[npt.NDArray[np.uint8]],
         block_scale_b: Optional[npt.NDArray[np.uint8]], block_scale_format: str, block: int,
         strict: bool) -> tuple[npt.NDArray[Any], str]: ...
def designed_inputs(fmt: str, round: str, seed: int, random_elements: int,
                    call_elements: int) -> dict[str, Any]: ...
def golden_check(corpus: str, results: str, suite: str = "all", strict_nan: bool = False,
                 allow_missing: bool = False) -> dict[str, Any]: ...
