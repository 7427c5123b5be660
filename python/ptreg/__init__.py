"""ptreg: accelerated point-set registration and 3-D features, from Python.

NumPy arrays in and out. Points are ``(N, 3)`` arrays: C-contiguous float32
arrays are read in place, anything else (Open3D's float64
``np.asarray(pcd.points)``, lists, strided views) is converted first. Open3D's
clouds themselves (``open3d.geometry.PointCloud``, ``open3d.t.geometry.PointCloud``)
and :class:`Cloud` are taken wherever points are, with their normals where the
call uses normals: a tensor cloud's float32 positions on the CPU are read in
place, a legacy cloud's float64 ones converted. :func:`to_open3d` goes the
other way. Open3D is imported only when one of its objects is involved. The
library runs without the GIL, so Python threads can run registrations side by
side. Errors are raised as :class:`ptreg.Error` subclasses only, with the
library's message, which names the file and the place where there is one.

Keywords are the command's options with ``_`` for ``-`` (``max_dist`` is
``--max-dist``, ``global_`` ``--global``, ``lambda_`` ``--lambda``), checked
by the library's option tables as the command line's are: ``None`` leaves an
option at its default, and a value the CLI refuses raises
:class:`ArgumentError`. Clouds far from zero (float64 UTM coordinates, as
:func:`read_cloud` gives them) are re-expressed about one origin per call, as
the CLI does, and transforms come back in the world.

Register two Open3D clouds::

    import open3d as o3d, ptreg
    source, target = (o3d.io.read_point_cloud(p) for p in ("a.ply", "b.ply"))
    result = ptreg.icp(source, target, method="plane", max_dist=0.05)
    print(result.transformation, result.fitness, result.rmse)

In a notebook a registration's result shows itself as ptreg's 3-D report
(``_repr_html_``) where the library was built with the viewer.
"""

from __future__ import annotations

import functools as _functools
import os as _os
import html as _html
import json as _json
import warnings as _warnings
from typing import Iterable, Iterator, Any, NamedTuple, Optional, Sequence, Union

import numpy as np

# libgomp reads its spin count once, as _core loads it: 10,000 turns (about
# 0.4 ms) rather than 300,000 (about 14 ms of a core after every parallel
# region), so that a tracker waiting between a sensor's frames costs no CPU
# (as `ptreg track` does; src/cli/main.c). A caller's own choice stands, and
# so does a libgomp another module loaded first.
if "GOMP_SPINCOUNT" not in _os.environ and "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "10000"

from . import _core  # noqa: E402
from ._core import (  # noqa: F401  (re-exported)
    ArgumentError,
    ComputationError,
    Error,
    FileError,
    FormatError,
    OutOfMemoryError,
    UnsupportedError,
)

__all__ = [
    "Cloud", "Volume", "Result", "ModelIndex", "LDDMMResult",
    "Error", "ArgumentError", "FileError", "FormatError", "OutOfMemoryError", "UnsupportedError",
    "ComputationError",
    "version", "set_num_threads", "get_num_threads", "devices",
    "read_cloud", "write_cloud", "read_transform", "write_transform", "read_volume", "write_volume",
    "voxel_downsample", "normals", "fpfh", "pfh",
    "icp", "register", "emicp", "cpd", "CPDResult", "batch", "harris3d", "lddmm", "warp", "tune", "multiway", "track", "eval_trajectory",
    "odometry", "Odometry", "localize", "Localizer", "read_kitti_poses", "write_kitti_poses",
    "to_open3d",
    "remove_statistical_outliers", "remove_radius_outliers", "random_downsample", "uniform_downsample",
    "evaluate", "register_correspondences",
]

__version__: str = _core.version()


def __dir__() -> list:
    """ptreg's own names (and its dunders): what ``dir(ptreg)`` and a
    notebook's completion offer, not the modules and typing names it uses."""
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__") and n.endswith("__")})

#: Points: an (N, 3) array, a :class:`Cloud` or an Open3D point cloud (legacy or tensor).
ArrayLike = Union[np.ndarray, Sequence[Sequence[float]], Any]
Matrix = Union[np.ndarray, Sequence[Sequence[float]]]

#: The voxel types of volumes, as NumPy dtypes (the library's names).
VOXEL_DTYPES = {"u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i16": np.int16,
                "u32": np.uint32, "i32": np.int32, "f32": np.float32, "f64": np.float64}

#: A coordinate of this magnitude or more loses a millimetre in float32
#: (PTREG_ORIGIN_THRESHOLD); beyond _ORIGIN_MAX the readers choose no origin.
_ORIGIN_THRESHOLD = 16384.0
_ORIGIN_MAX = 1e12
_ZERO = (0.0, 0.0, 0.0)

#: A Harris keypoint: its voxel (x fastest in the volume) and its score.
KEYPOINT_DTYPE = np.dtype([("x", "<u4"), ("y", "<u4"), ("z", "<u4"), ("score", "<f4")])


class Result(dict):
    """A registration's or detector's result: a dict whose keys are also
    attributes (``result.transformation``, ``result["fitness"]``).

    The results of :func:`icp`, :func:`register` and :func:`emicp` show
    themselves in a notebook as ptreg's 3-D report (:meth:`_repr_html_`)."""

    def _repr_html_(self) -> Optional[str]:
        """The report page in an ``<iframe srcdoc>``: the target, the source
        before (moved by ``init``) and after, coloured by its distance to the
        target, the per-iteration curve and the result's numbers. None (the
        notebook then shows the repr) for other results, or where the library
        was built without the report's viewer."""
        kept = self.__dict__.get("_report_inputs")
        if kept is None or not _core.report_available():
            return None
        page = _report_page(self, *kept)
        return ('<iframe style="width: 100%; height: 640px; border: 0" srcdoc="'
                + _html.escape(page, quote=True) + '"></iframe>')

    def __getstate__(self) -> dict:
        """Pickled without the report's inputs: the clouds (and a ModelIndex,
        which does not pickle) are the caller's, not the result's."""
        return {k: v for k, v in self.__dict__.items() if k != "_report_inputs"}

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self):
        return list(self.keys()) + list(super().__dir__())


class Cloud(NamedTuple):
    """A point cloud: ``points`` (N, 3) float32 (float64 world coordinates
    for a file far from zero), ``normals`` (N, 3) float32 or None,
    ``dropped`` the points read with a non-finite coordinate, ``origin`` the
    world position (x, y, z) the computations measure the points from: the
    one the file's reader chose for a cloud far from zero (docs/FORMATS.md),
    else (0, 0, 0). Every call re-expresses float64 points about one origin,
    computes in float32 there, and gives transforms and points back in the
    world, as the command line does. ``colors`` (N, 3) uint8 red, green,
    blue, or None: the file's (PLY, PCD, LAS, text), written back by
    :func:`write_cloud`."""
    points: np.ndarray
    normals: Optional[np.ndarray] = None
    dropped: int = 0
    origin: tuple = (0.0, 0.0, 0.0)
    colors: Optional[np.ndarray] = None


class Volume(NamedTuple):
    """A volume: ``data`` indexed ``[z, y, x]`` (x fastest in memory, as in
    the files), ``spacing`` and ``origin`` per axis in (x, y, z) order."""
    data: np.ndarray
    spacing: tuple = (1.0, 1.0, 1.0)
    origin: tuple = (0.0, 0.0, 0.0)


# ---- conversions -------------------------------------------------------------

def _is_open3d(obj: Any) -> bool:
    """By the type's module, so that open3d need not be imported to ask."""
    return type(obj).__module__.split(".")[0] == "open3d"


def _tensor_array(t: Any) -> np.ndarray:
    """A tensor's NumPy view (its memory, no copy) where it is on the CPU."""
    return t.numpy() if str(t.device).upper().startswith("CPU") else t.cpu().numpy()


def _open3d_arrays(cloud: Any) -> tuple:
    """(points, normals or None) of an Open3D cloud, as its own memory: the
    tensor cloud's arrays are views, the legacy cloud's float64 views."""
    if hasattr(cloud, "point"):  # open3d.t.geometry.PointCloud: a map of named tensors
        attrs = cloud.point
        normals = _tensor_array(attrs["normals"]) if "normals" in attrs else None
        return _tensor_array(attrs["positions"]), normals
    if hasattr(cloud, "points") and hasattr(cloud, "has_normals"):  # open3d.geometry.PointCloud
        return np.asarray(cloud.points), np.asarray(cloud.normals) if cloud.has_normals() else None
    raise TypeError(f"{type(cloud).__name__}: not an Open3D point cloud")


def _cloud_normals(a: Any) -> Optional[np.ndarray]:
    """The normals a :class:`Cloud` or an Open3D cloud carries; None for arrays."""
    if isinstance(a, Cloud):
        return a.normals
    return _open3d_arrays(a)[1] if _is_open3d(a) else None


def _unwrapped(a: ArrayLike) -> Any:
    """The points of a :class:`Cloud` or an Open3D cloud; anything else as it is."""
    if isinstance(a, Cloud):
        return a.points
    return _open3d_arrays(a)[0] if _is_open3d(a) else a


def _points(a: ArrayLike, name: str = "points") -> np.ndarray:
    """(N, 3) C-contiguous float32: the array itself when it is one (no copy)."""
    arr = np.ascontiguousarray(_unwrapped(a), dtype=np.float32)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ArgumentError(f"{name}: an (N, 3) array is needed, got shape {arr.shape}")
    return arr


def _points64(a: ArrayLike, name: str) -> np.ndarray:
    arr = np.ascontiguousarray(_unwrapped(a), dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ArgumentError(f"{name}: an (N, 3) array is needed, got shape {arr.shape}")
    return arr


def _optional_points(a: Optional[ArrayLike], name: str) -> Optional[np.ndarray]:
    return None if a is None else _points(a, name)


def _normals_of(given: Optional[ArrayLike], cloud: Any, name: str, used: bool = True) -> Optional[np.ndarray]:
    """The normals given, else the cloud's own where the call uses them."""
    if given is None and used:
        given = _cloud_normals(cloud)
    return _optional_points(given, name)


def _matrix(m: Optional[Matrix], name: str) -> Optional[list]:
    if m is None:
        return None
    arr = np.asarray(m, dtype=np.float64)
    if arr.shape != (4, 4):
        raise ArgumentError(f"{name}: a 4 x 4 matrix is needed, got shape {arr.shape}")
    return arr.ravel().tolist()


def _keep_for_report(r: Result, title: str, source: np.ndarray, target: Any, init: Optional[Matrix],
                     curve: Optional[str], origin: tuple = _ZERO) -> Result:
    """Keeps what the report draws on the result, by reference: the arrays the
    call read (the caller's own where no conversion was needed), and the
    origin they are measured from."""
    r._report_inputs = (title, source, target, init, curve, origin)
    return r


def _moved(points: np.ndarray, transformation: Optional[Matrix]) -> np.ndarray:
    """points under a 4 x 4 transform, in double, back to float32."""
    if transformation is None:
        return points
    m = np.asarray(transformation, dtype=np.float64).reshape(4, 4)
    return np.ascontiguousarray(points @ m[:3, :3].T + m[:3, 3], dtype=np.float32)


def _json_value(v: Any) -> Any:
    """A result's value as JSON: arrays as lists, NumPy scalars as numbers."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"{type(v).__name__} is not JSON")


def _report_page(r: Result, title: str, source: np.ndarray, target: Any, init: Optional[Matrix],
                 curve: Optional[str], origin: tuple = _ZERO) -> str:
    """The report's HTML, made by the library (ptreg/report.h), drawn about
    the call's origin (the float32 points it computed with)."""
    index = target if isinstance(target, ModelIndex) else ModelIndex(target, delaunay=False)
    tgt = index.info.points if isinstance(target, ModelIndex) else target
    after = _moved(source, _transform_to_local(r["transformation"], origin))
    nearest, dist2 = np.empty(len(after), dtype=np.uint32), np.empty(len(after), dtype=np.float32)
    _core.index_nearest(index._capsule, after, nearest, dist2)  # both in the index's frame
    distance = np.sqrt(dist2)
    layers = [("cloud", "target", tgt, 0x9E9E9E),
              ("cloud", "source before", _moved(source, _transform_to_local(init, origin)), 0xE0803A),
              ("values", "source after", after, distance, "distance to the target")]
    curves = []
    if curve and curve in r and len(r[curve]):
        curves.append((curve.upper() + " per iteration", curve, np.ascontiguousarray(r[curve], dtype=np.float64)))
    numbers = _json.dumps(dict(r), default=_json_value)
    return _core.report_html(title, layers, curves, numbers)


def _rows(buffer: bytearray, dtype, width: int) -> np.ndarray:
    return np.frombuffer(buffer, dtype=dtype).reshape(-1, width)


def _in_world(r: Result, origin: tuple, *keys: str) -> Result:
    """The result's transforms (computed about origin) as the world's."""
    for k in keys:
        r[k] = _transform_to_world(r[k], origin)
    return r


def _with_transform(d: dict, *keys: str) -> Result:
    r = Result(d)
    for k in keys:
        r[k] = np.array(r[k], dtype=np.float64).reshape(4, 4)
    if "mse" in r:
        r["mse"] = np.array(r["mse"], dtype=np.float64)
    return r


# ---- clouds far from zero: one frame per call ---------------------------------
#
# float32 keeps about 7 digits: a UTM northing would be rounded to half a
# metre. As the command line does (src/cli/common.c, cli_join_frame), each
# call takes one origin, re-expresses every float64 input about it (one
# rounding of the double difference), computes there, and turns transforms
# and points back into the world.


def _origin_of(a: Any) -> tuple:
    """The origin a cloud asks for: a :class:`Cloud`'s or a
    :class:`ModelIndex`'s own; for other float64 points the readers' rule
    (the first point's coordinate rounded to a whole unit on each axis where
    float32 would lose a millimetre); (0, 0, 0) for float32 points, which are
    already what they are."""
    if isinstance(a, (Cloud, ModelIndex)):
        return tuple(float(v) for v in a.origin)
    arr = _unwrapped(a)
    if not isinstance(arr, np.ndarray):
        arr = np.asarray(arr)
    if arr.dtype == np.float32 or arr.ndim != 2 or arr.shape[1] != 3 or len(arr) == 0:
        return _ZERO
    first = np.asarray(arr[0], dtype=np.float64)
    return tuple(float(np.rint(v)) if _ORIGIN_THRESHOLD <= abs(v) < _ORIGIN_MAX else 0.0 for v in first)


def _frame(*clouds: Any) -> tuple:
    """The call's origin: the first cloud's that has one (the command line
    takes the first file's)."""
    for c in clouds:
        if c is not None:
            o = _origin_of(c)
            if o != _ZERO:
                return o
    return _ZERO


def _local(a: ArrayLike, origin: tuple, name: str = "points") -> np.ndarray:
    """(N, 3) float32 points relative to origin: the array itself where the
    origin is zero and it is C-contiguous float32, else (world - origin) in
    double rounded once to float32."""
    if origin == _ZERO:
        return _points(a, name)
    arr = _points64(a, name)
    return np.ascontiguousarray(arr - np.asarray(origin, dtype=np.float64), dtype=np.float32)


def _world_points(local: np.ndarray, origin: tuple) -> np.ndarray:
    """float32 local points as float64 world ones (the same array where the origin is zero)."""
    if origin == _ZERO:
        return local
    return local.astype(np.float64) + np.asarray(origin, dtype=np.float64)


def _transform_to_local(T: Optional[Matrix], origin: tuple) -> Optional[np.ndarray]:
    """A world transform as it acts on coordinates relative to origin o:
    Tr(-o) T Tr(o), t' = R o + t - o (ptreg_transform_to_local)."""
    if T is None:
        return None
    M = np.array(T, dtype=np.float64).reshape(4, 4)
    if origin != _ZERO:
        o = np.asarray(origin, dtype=np.float64)
        M[:3, 3] = (M[:3, :3] @ o - o) + M[:3, 3]
    return M


def _transform_to_world(T: np.ndarray, origin: tuple) -> np.ndarray:
    """The inverse map, Tr(o) T Tr(-o): t = t' + o - R o (ptreg_transform_to_world)."""
    M = np.array(T, dtype=np.float64).reshape(4, 4)
    if origin != _ZERO:
        o = np.asarray(origin, dtype=np.float64)
        M[:3, 3] = M[:3, 3] - (M[:3, :3] @ o - o)
    return M


# ---- keywords: the command line's names ------------------------------------------

def _renamed(**old: Any):
    """Old keywords kept for one release: each ``old=new`` (a new keyword's
    name, or a function of the old value giving new keywords) is accepted
    with a DeprecationWarning naming the new one."""
    def wrap(fn):
        @_functools.wraps(fn)
        def call(*args, **kwargs):
            for name, new in old.items():
                if name not in kwargs:
                    continue
                value = kwargs.pop(name)
                given = new(value) if callable(new) else {new: value}
                said = ", ".join(f"{k}=" for k in given) or "its default"
                _warnings.warn(f"ptreg.{fn.__name__}: {name}= is deprecated, use {said}", DeprecationWarning,
                               stacklevel=2)
                for k, v in given.items():
                    if k in kwargs:
                        raise ArgumentError(f"{fn.__name__}: give {k}= or the deprecated {name}=, not both")
                    kwargs[k] = v
            return fn(*args, **kwargs)
        return call
    return wrap


def to_open3d(points: Union[ArrayLike, Cloud], normals: Optional[ArrayLike] = None,
              colors: Optional[ArrayLike] = None) -> Any:
    """An ``open3d.geometry.PointCloud`` of ``points`` ((N, 3), or a
    :class:`Cloud`, whose normals come along unless ``normals`` is given),
    ``normals`` (N, 3) and ``colors`` (N, 3: floats in [0, 1], or uint8)."""
    import open3d  # here: ptreg does not need it otherwise

    if isinstance(points, Cloud) and normals is None:
        normals = points.normals
    pts = _points64(points, "points")
    pcd = open3d.geometry.PointCloud(open3d.utility.Vector3dVector(pts))
    if normals is not None:
        pcd.normals = open3d.utility.Vector3dVector(_rows_like(normals, len(pts), "normals"))
    if colors is not None:
        c = np.asarray(colors)
        scale = 255.0 if c.dtype == np.uint8 else 1.0
        pcd.colors = open3d.utility.Vector3dVector(_rows_like(c / scale, len(pts), "colors"))
    return pcd


def _rows_like(a: ArrayLike, n: int, name: str) -> np.ndarray:
    """(n, 3) float64, one row a point."""
    arr = _points64(a, name)
    if len(arr) != n:
        raise ArgumentError(f"{name}: {len(arr)} rows for {n} points")
    return arr


# ---- the library ---------------------------------------------------------------

def version() -> str:
    """The library's version, e.g. ``"0.1.0"``."""
    return _core.version()


def set_num_threads(n: int) -> None:
    """Threads every later call uses; 0: one per core (the default). Results
    are the same bits for any thread count."""
    _core.set_num_threads(int(n))


def get_num_threads() -> int:
    """Threads the library uses now."""
    return _core.get_num_threads()


def devices() -> list:
    """The compute devices found: dicts with ``device`` (the name ``device=``
    options take: ``"cpu"``, ``"cuda:0"``, ``"opencl:1"`` ...), ``backend``, ``name``,
    ``vendor``, ``platform``, ``version``, ``gpu`` (also ``is_gpu``), ``for_testing`` (a CPU
    OpenCL driver, which ``"auto"`` never picks), ``standin`` (the CUDA
    driver stand-in of ptreg's tests, never a real GPU), ``memory_bytes``,
    ``compute_units``, ``local_memory_bytes``, ``max_work_group`` and ``fp64``: the keys of
    ``ptreg devices --json``'s entries but its probe's."""
    return _core.devices()


# ---- files -------------------------------------------------------------------

def read_cloud(path: str, format: Optional[str] = None) -> Cloud:
    """Reads a point cloud: PLY, PCD (ascii, binary, binary_compressed), XYZ/CSV/TXT,
    VTK, or an atom-probe POS/EPOS file; the format from the extension unless
    ``format`` names it. Points with a non-finite coordinate are dropped (counted
    in ``dropped``). Malformed files raise :class:`FormatError` naming the place.
    Points far from zero (UTM eastings and northings: docs/FORMATS.md) come as
    float64 world coordinates, which float32 would round to half a metre, and
    the :class:`Cloud` carries the origin the reader chose."""
    xyz, nrm, dropped, world, origin, rgb = _core.read_cloud(str(path), format)
    points = _rows(xyz, np.float64 if world else np.float32, 3)
    return Cloud(points, None if nrm is None else _rows(nrm, np.float32, 3), dropped, tuple(origin),
                 None if rgb is None else _rows(rgb, np.uint8, 3))


def write_cloud(path: str, points: ArrayLike, normals: Optional[ArrayLike] = None, *,
                format: Optional[str] = None, ascii: bool = False, colors: Optional[ArrayLike] = None) -> None:
    """Writes a point cloud (PLY, PCD, XYZ, VTK or POS by extension or ``format``;
    binary unless ``ascii``), atomically: a failure leaves no partial file.
    float64 points far from zero are written as the world's (PLY and PCD in
    double, LAS with its offset at the origin), as the command line writes them.
    ``colors`` (N, 3) uint8 (default: a :class:`Cloud`'s own) go into PLY, PCD,
    LAS and text."""
    origin = _frame(points)
    pts = _local(points, origin)
    nrm = _normals_of(normals, points, "normals")
    if colors is None and isinstance(points, Cloud):
        colors = points.colors
    rgb = None if colors is None else np.ascontiguousarray(colors, dtype=np.uint8)
    _core.write_cloud(str(path), pts, nrm, format, bool(ascii), origin, rgb)


def read_transform(path: str) -> np.ndarray:
    """Reads a 4 x 4 transform: 16 numbers (or the top 12) as text, or JSON
    (``{"transformation": rows}``, what the CLI's ``--json`` and ``-t T.json`` write)."""
    return np.array(_core.read_transform(str(path)), dtype=np.float64).reshape(4, 4)


def write_transform(path: str, transformation: Matrix) -> None:
    """Writes a 4 x 4 transform, atomically: as text, or as JSON
    (``{"transformation": rows}``) to a path ending ``.json``."""
    _core.write_transform(str(path), _matrix(transformation, "transformation"))


def read_volume(path: str, *, dims: Optional[Sequence[int]] = None, dtype: Optional[str] = None,
                big_endian: bool = False) -> Volume:
    """Reads a volume: NRRD (raw, gzip or ascii; attached or detached), NIfTI-1
    (.nii, .nii.gz), or headerless raw voxels, whose ``dims`` (x, y, z) and
    ``dtype`` (``"u8"`` ... ``"f64"``) come from the arguments or a name like
    ``NAME_64x64x32_u16.raw``. ``data`` is indexed ``[z, y, x]``."""
    nx, ny, nz = dims if dims is not None else (0, 0, 0)
    data, (nx, ny, nz), tname, spacing, origin = _core.read_volume(str(path), (nx, ny, nz), dtype, big_endian)
    arr = np.frombuffer(data, dtype=VOXEL_DTYPES[tname]).reshape(nz, ny, nx)
    return Volume(arr, tuple(spacing), tuple(origin))


def _voxel_type(arr: np.ndarray) -> str:
    for name, dt in VOXEL_DTYPES.items():
        if arr.dtype == np.dtype(dt):
            return name
    raise TypeError(f"volume: dtype {arr.dtype} is not a voxel type ({', '.join(VOXEL_DTYPES)})")


def _volume_array(data: Union[Volume, np.ndarray]) -> tuple:
    """(C-contiguous [z, y, x] array in native byte order, spacing, origin)."""
    spacing, origin = (1.0, 1.0, 1.0), (0.0, 0.0, 0.0)
    if isinstance(data, Volume):
        data, spacing, origin = data.data, data.spacing, data.origin
    arr = np.asarray(data)
    if arr.ndim != 3:
        raise ArgumentError(f"volume: a 3-D array [z, y, x] is needed, got shape {arr.shape}")
    arr = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))
    return arr, tuple(spacing), tuple(origin)


def write_volume(path: str, data: Union[Volume, np.ndarray], *, spacing: Optional[Sequence[float]] = None,
                 origin: Optional[Sequence[float]] = None) -> None:
    """Writes a volume (a :class:`Volume` or an array indexed ``[z, y, x]``),
    atomically, by extension: ``.nrrd`` (NRRD) or ``.nii`` (NIfTI-1); another
    extension raises :class:`ArgumentError`."""
    arr, sp, org = _volume_array(data)
    nz, ny, nx = arr.shape
    _core.write_volume(str(path), arr, (nx, ny, nz), _voxel_type(arr), list(spacing or sp), list(origin or org))


# ---- preprocessing and features ---------------------------------------------

def voxel_downsample(points: ArrayLike, voxel: float, normals: Optional[ArrayLike] = None) -> Cloud:
    """Open3D's VoxelDownSample: the centroid of each occupied cube of side
    ``voxel`` (cubes from half a voxel below the cloud's minimum), and the
    cube's mean normal made unit; in the order of each cube's first point.
    Points far from zero come back as float64 world coordinates, with the origin."""
    origin = _frame(points)
    xyz, nrm = _core.voxel_downsample(_local(points, origin), _normals_of(normals, points, "normals"), float(voxel))
    down = _world_points(_rows(xyz, np.float32, 3), origin)
    return Cloud(down, None if nrm is None else _rows(nrm, np.float32, 3), 0, origin)


def _k_of(k: Optional[int], radius: Optional[float]) -> Optional[int]:
    """k 0 with a radius was the old spelling of "every point within it":
    None now, as the command line's --radius alone."""
    if k == 0 and radius is not None:
        _warnings.warn("k=0 with radius= is deprecated: leave k out for every point within the radius",
                       DeprecationWarning, stacklevel=3)
        return None
    return k


def _radius_of(radius: Optional[float]) -> Optional[float]:
    """radius 0 was the old spelling of "no radius": None now."""
    if radius is not None and radius == 0:
        _warnings.warn("radius=0 is deprecated: leave radius out for no radius", DeprecationWarning, stacklevel=3)
        return None
    return radius


@_renamed(orientation="orient")
def normals(points: ArrayLike, *, k: Optional[int] = None, radius: Optional[float] = None, orient: str = "viewpoint",
            viewpoint: Sequence[float] = (0.0, 0.0, 0.0), direction: Sequence[float] = (0.0, 0.0, 1.0),
            orient_k: Optional[int] = None, curvature: bool = False, device: str = "auto"):
    """Normals by PCA of each point's neighbors, as ``ptreg normals``: the
    ``k`` nearest (default 30), every point closer than ``radius`` (``radius``
    alone), or the ``k`` nearest of those (both: Open3D's hybrid search);
    oriented (``orient``) toward ``viewpoint`` (a world position), along
    ``direction``, ``"none"``, or ``"tangent-plane"`` (consistent over the
    surface, as Open3D's; ``orient_k`` its graph's neighbors). A point whose
    neighborhood is degenerate gets NaN. Returns the (N, 3) normals, or
    ``(normals, curvature)`` when ``curvature``."""
    radius = _radius_of(radius)
    k = _k_of(k, radius)
    origin = _frame(points)
    pts = _local(points, origin)
    out = np.empty_like(pts)
    curv = np.empty(len(pts), dtype=np.float32) if curvature else None
    view = np.asarray(viewpoint, dtype=np.float64) - np.asarray(origin, dtype=np.float64)
    _core.normals(pts, out, curv, k=k, radius=radius, orientation=orient, viewpoint=view.tolist(),
                  direction=list(direction), orient_k=orient_k, device=device)
    return (out, curv) if curvature else out


def _feature(fn, bins: int, points, normals_, k, radius, convention, device) -> np.ndarray:
    radius = _radius_of(radius)
    k = _k_of(k, radius)
    pts = _local(points, _frame(points))
    nrm = _normals_of(normals_, points, "normals")
    if nrm is None:
        raise ArgumentError("normals: give them, or a cloud that has them (ptreg.normals makes them)")
    out = np.empty((len(pts), bins), dtype=np.float32)
    fn(pts, nrm, out, k=k, radius=radius, convention=convention, device=device)
    return out


def fpfh(points: ArrayLike, normals: Optional[ArrayLike] = None, *, k: Optional[int] = None,
         radius: Optional[float] = None, convention: str = "pcl", device: str = "auto") -> np.ndarray:
    """Fast Point Feature Histograms, (N, 33) float32, as ``ptreg fpfh``: each
    point's ``k`` nearest neighbors (default 30), every point closer than
    ``radius`` (``radius`` alone, as PCL's setRadiusSearch: no cap), or the
    ``k`` nearest of those (both: Open3D's hybrid search). ``convention``
    ``"pcl"`` (blocks sum to 100) or ``"open3d"`` (the point's own SPFH added).
    Rows of points without enough neighbors are NaN. ``normals``: given, or
    those of ``points`` when it is a cloud that has them."""
    return _feature(_core.fpfh, _core.FPFH_BINS, points, normals, k, radius, convention, device)


def pfh(points: ArrayLike, normals: Optional[ArrayLike] = None, *, k: Optional[int] = None,
        radius: Optional[float] = None, device: str = "auto") -> np.ndarray:
    """Point Feature Histograms, (N, 125) float32 (PCL's), neighborhoods as :func:`fpfh`."""
    return _feature(_core.pfh, _core.PFH_BINS, points, normals, k, radius, "pcl", device)


# ---- registration --------------------------------------------------------------

class ModelIndex:
    """A model's search structures (k-d tree and Delaunay graph), built once and
    reused by many :func:`icp` calls (pass it as the target), saved to and loaded
    from ``.pti`` files (``ptreg index`` writes the same). Points far from zero
    (float64) are kept about their ``origin``, as a :class:`Cloud`'s; an index
    file keeps no origin, so such an index is not saved. :meth:`nearest`,
    :meth:`knn` and :meth:`radius` answer exactly (the k-d tree)."""

    def __init__(self, points: Optional[ArrayLike] = None, *, delaunay: bool = True,
                 leaf_size: Optional[int] = None, _capsule=None):
        self.origin = _ZERO if _capsule is not None else _frame(points)
        if _capsule is None:
            _capsule = _core.index_create(_local(points, self.origin), delaunay=int(delaunay), leaf_size=leaf_size)
        self._capsule = _capsule
        self._kdtree = None

    @classmethod
    def load(cls, path: str) -> "ModelIndex":
        """Reads a ``.pti`` index (checked: a corrupted or foreign file raises FormatError)."""
        return cls(_capsule=_core.index_load(str(path)))

    def save(self, path: str) -> None:
        """Writes the index as a ``.pti`` file, atomically."""
        if self.origin != _ZERO:
            raise ArgumentError(f"{path}: an index file keeps no origin, and this model is far from zero (origin "
                                f"{self.origin[0]:.17g} {self.origin[1]:.17g} {self.origin[2]:.17g}): keep the cloud")
        _core.index_save(self._capsule, str(path))

    @property
    def info(self) -> Result:
        """``points`` (the model), ``delaunay`` (also ``has_delaunay``), ``delaunay_edges``,
        ``delaunay_note`` (why there is no graph), ``duplicates_merged`` (also ``duplicates``)
        and build times (``kdtree_ms``, ``delaunay_ms``, ``build_ms``): the keys of ``ptreg
        info MODEL.pti --json``."""
        d = Result(_core.index_info(self._capsule))
        d["points"] = _rows(d["points"], np.float32, 3)
        return d

    @property
    def points(self) -> np.ndarray:
        """The model's points (float64 world coordinates where it has an origin)."""
        return _world_points(self.info.points, self.origin)

    def nearest(self, queries: ArrayLike) -> tuple:
        """Each query's nearest model point by the k-d tree: ``(indices,
        distances)``, uint32 model indexes (original order) and float32
        Euclidean distances."""
        q = _local(queries, self.origin, "queries")
        nearest = np.empty(len(q), dtype=np.uint32)
        dist2 = np.empty(len(q), dtype=np.float32)
        _core.index_nearest(self._capsule, q, nearest, dist2)
        return nearest, np.sqrt(dist2)

    def _tree(self):
        """The k-d tree of the k-NN and radius queries, built on first use."""
        if self._kdtree is None:
            self._kdtree = _core.kdtree_create(self._capsule)
        return self._kdtree

    def knn(self, points: ArrayLike, k: int) -> tuple:
        """Each query's ``k`` nearest model points, exactly: ``(indices,
        distances)``, (M, k) uint32 model indexes and float32 Euclidean
        distances, nearest first (ties by the lower index); where the model
        has fewer than ``k`` points the rest are index 2^32 - 1 and distance inf."""
        q = _local(points, self.origin, "points")
        k = int(k)
        if k < 1:
            raise ArgumentError(f"knn: k {k} must be at least 1")
        index = np.empty((len(q), k), dtype=np.uint32)
        dist2 = np.empty((len(q), k), dtype=np.float32)
        _core.kdtree_knn(self._tree(), q, k, index, dist2)
        return index, np.sqrt(dist2)

    def radius(self, points: ArrayLike, r: float, max_nn: Optional[int] = None) -> tuple:
        """Every model point within ``r`` of each query (squared distance <=
        r^2 in float32), exactly, nearest first; the first ``max_nn`` of them
        where given. Returns ``(indices, distances)``: lists of one uint32 and
        one float32 array per query."""
        q = _local(points, self.origin, "points")
        if max_nn is not None and int(max_nn) < 1:
            raise ArgumentError(f"radius: max_nn {max_nn} must be at least 1")
        offsets, index, dist2 = _core.kdtree_radius(self._tree(), q, float(r), int(max_nn or 0))
        bounds = np.frombuffer(offsets, dtype=np.uint64).astype(np.intp)
        index = np.frombuffer(index, dtype=np.uint32)
        dist = np.sqrt(np.frombuffer(dist2, dtype=np.float32))
        return ([index[bounds[i]:bounds[i + 1]] for i in range(len(q))],
                [dist[bounds[i]:bounds[i + 1]] for i in range(len(q))])


def icp(source: ArrayLike, target: Union[ArrayLike, ModelIndex], *, method: str = "point",
        max_iter: int = 200, max_dist: Optional[float] = None, init: Optional[Matrix] = None,
        kernel: str = "none", kernel_scale: Optional[float] = None, lm: Optional[float] = None,
        source_normals: Optional[ArrayLike] = None, target_normals: Optional[ArrayLike] = None,
        normal_k: int = 10, normal_radius: Optional[float] = None, gicp_epsilon: Optional[float] = None,
        tol: Optional[float] = None, relative_fitness: Optional[float] = None,
        relative_rmse: Optional[float] = None, transformation_epsilon: Optional[float] = None,
        filter_sigma: Optional[float] = None, filter_start: Optional[int] = None, trim: Optional[float] = None,
        nn: str = "auto", device: str = "auto", scale: bool = False) -> Result:
    """Rigid ICP of ``source`` onto ``target`` (an (M, 3) array or a :class:`ModelIndex`),
    as ``ptreg icp`` (the keywords are its options). float64 clouds far from
    zero (UTM) are registered about one origin and ``transformation`` is the
    world's, as the command line's; ``init`` is a world transform too.

    ``method``: ``"point"`` (Besl & McKay, Horn's closed form), ``"plane"``
    (point-to-plane), ``"symmetric"`` (Rusinkiewicz) or ``"gicp"`` (Generalized-ICP),
    the last three by Gauss-Newton in double (Levenberg-Marquardt from damping
    ``lm``). Normals: given, or estimated from ``normal_k`` neighbors (within
    ``normal_radius``). ``kernel``: ``"huber"``, ``"cauchy"``, ``"tukey"`` or ``"gm"``
    with ``kernel_scale``, as Open3D's. Stops: ``tol`` (the MSE's change; default
    1e-10 x the target's diagonal squared; 0: never), Open3D's ``relative_fitness``
    and ``relative_rmse``, PCL's ``transformation_epsilon``, ``max_iter``. ``scale``:
    fit a uniform scale too (similarity ICP, Umeyama's closed form; ``"point"``
    without a kernel or ``lm``, on the CPU); ``transformation`` then holds s R.

    Returns a :class:`Result`: ``transformation`` (4 x 4, takes source onto
    target), ``fitness``, ``rmse`` (as Open3D's), ``pairs``, ``iterations``,
    ``converged``, ``stop_reason``, ``mse`` per iteration, ``time_ms``, ``build_ms``, ``nn``,
    ``nn_note``, ``nn_measured``, ``device``, ``upload_ms`` and, for the Delaunay methods,
    ``walk`` (per pass: ``queries``, ``mean_steps``, ``max_steps``, ``fallbacks``, ``kept``,
    ``histogram``): the keys of ``ptreg icp --json`` (one table, ``ptreg/results.h``)."""
    origin = target.origin if isinstance(target, ModelIndex) else _frame(source, target)
    if origin == _ZERO and _frame(source) != _ZERO:
        raise ArgumentError("icp: the source is far from zero (float64 world coordinates) but the ModelIndex is not: "
                            "build the index from the model's float64 points or its Cloud")
    options = dict(method=method, max_iter=max_iter, max_dist=max_dist,
                   init=_matrix(_transform_to_local(init, origin), "init"), kernel=kernel,
                   kernel_scale=kernel_scale, lm=lm, normal_k=normal_k, normal_radius=normal_radius,
                   gicp_epsilon=gicp_epsilon, tol=tol, relative_fitness=relative_fitness,
                   relative_rmse=relative_rmse, transformation_epsilon=transformation_epsilon,
                   filter_sigma=filter_sigma, filter_start=filter_start, trim=trim, nn=nn, device=device,
                   scale=int(bool(scale)))
    src = _local(source, origin, "source")
    # the clouds' own normals where the method reads them (the library says which)
    reads_source, reads_target = _core.icp_normals(method)
    sn = _normals_of(source_normals, source, "source_normals", reads_source)
    tn = _normals_of(target_normals, target, "target_normals", reads_target)
    tgt = target._capsule if isinstance(target, ModelIndex) else _local(target, origin, "target")
    d = _core.icp(src, tgt, sn, tn, **options)
    r = _in_world(_with_transform(d, "transformation"), origin, "transformation")
    return _keep_for_report(r, "ptreg icp", src, target if isinstance(target, ModelIndex) else tgt, init, "mse",
                            origin)


def _zero_unset(*names: str):
    """Keywords whose 0 meant "the default" before (the CLI refuses 0): 0 is
    taken as None for one release, with a DeprecationWarning."""
    def wrap(fn):
        @_functools.wraps(fn)
        def call(*args, **kwargs):
            for name in names:
                if kwargs.get(name) is not None and kwargs[name] == 0:
                    _warnings.warn(f"ptreg.{fn.__name__}: {name}=0 for the default is deprecated: leave it out "
                                   "(None)", DeprecationWarning, stacklevel=2)
                    kwargs[name] = None
            return fn(*args, **kwargs)
        return call
    return wrap


def _old_global_method(fn):
    """register's and multiway's ``method`` was the global stage (ransac, fgr),
    where the command line's --method is the ICP after it: an old global
    name given as ``method`` is taken as ``global_``, with a DeprecationWarning."""
    @_functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs.get("method") in ("ransac", "fgr"):
            if "global_" in kwargs:
                raise ArgumentError(f"{fn.__name__}: method={kwargs['method']!r} is the ICP's now: give global_= only")
            _warnings.warn(f"ptreg.{fn.__name__}: method={kwargs['method']!r} (the global stage) is deprecated, use "
                           f"global_={kwargs['method']!r}; method= is the ICP's method, as --method",
                           DeprecationWarning, stacklevel=2)
            kwargs["global_"] = kwargs.pop("method")
        return fn(*args, **kwargs)
    return call


def _no_refine(refine: Optional[str]) -> dict:
    return {"no_refine": True} if refine is None else {"method": refine}


@_old_global_method
@_zero_unset("voxel")
@_renamed(refine=_no_refine, mutual=lambda v: {"one_way": not v}, max_dist="ransac_dist",
          ransac_max_iter="ransac_iter", fgr_iterations="fgr_iter")
def register(source: ArrayLike, target: ArrayLike, *, voxel: Optional[float] = None, global_: str = "ransac",
             method: str = "plane", no_refine: bool = False, source_normals: Optional[ArrayLike] = None,
             target_normals: Optional[ArrayLike] = None, one_way: bool = False, ratio: Optional[float] = None,
             refine_dist: Optional[float] = None, refine_iter: Optional[int] = None,
             ransac_dist: Optional[float] = None, ransac_iter: Optional[int] = None,
             confidence: Optional[float] = None, edge_length: Optional[float] = None,
             check_distance: Optional[float] = None, normal_angle: Optional[float] = None,
             fgr_iter: Optional[int] = None, fgr_division_factor: Optional[float] = None,
             seed: Optional[int] = None, device: str = "auto") -> Result:
    """Global registration without an initial guess, as ``ptreg register``
    (the keywords are its options; ``global_`` is --global): voxel-grid
    downsampling (``voxel``; default the target's diagonal / 80), normals,
    FPFH, mutual feature matches (``one_way``: every source point's nearest;
    ``ratio``: only those nearer than ``ratio`` times the second nearest, Lowe's test),
    then RANSAC (Open3D's checkers) or FGR (``global_="fgr"``), then ICP on all
    points (``method``: ``"plane"``, ``"gicp"``, ``"symmetric"`` or
    ``"point"``; ``no_refine`` stops before it). On a GPU ``device`` (double
    precision) scores RANSAC's hypotheses and runs the refinement: the CPU's
    winner. Give :class:`Cloud` s (or
    Open3D clouds) to keep the files' normals, as the command line does:
    ``ptreg.register(ptreg.read_cloud("a.ply"), ptreg.read_cloud("b.ply"))``;
    bare arrays carry none, and the refinement then estimates them. Clouds
    far from zero are registered about one origin; the transforms are the world's.

    Returns a :class:`Result`: ``transformation``, ``global_transformation`` (before
    refinement), ``fitness``, ``rmse``, ``voxel``, ``matches``, ``source_points_down``,
    ``target_points_down``, ``ransac_hypotheses``, ``ransac_checked``, ``ransac_inliers``,
    ``fgr_tuples`` (the keys of ``ptreg register --json``; ``source_down``, ``target_down``
    and ``inliers`` are the older names), ``device`` and each stage's time
    (``downsample_ms`` ... ``time_ms``)."""
    origin = _frame(source, target)
    src, tgt = _local(source, origin, "source"), _local(target, origin, "target")
    d = _core.register(src, tgt, _normals_of(source_normals, source, "source_normals"),
                       _normals_of(target_normals, target, "target_normals"),
                       voxel=voxel, method=method, no_refine=int(bool(no_refine)), mutual=int(not one_way),
                       ratio=ratio, refine_dist=refine_dist, refine_iter=refine_iter, ransac_dist=ransac_dist,
                       ransac_iter=ransac_iter, confidence=confidence, edge_length=edge_length,
                       check_distance=check_distance, normal_angle=normal_angle, fgr_iter=fgr_iter,
                       fgr_division_factor=fgr_division_factor, seed=seed, device=device,
                       **{"global": global_})
    r = _in_world(_with_transform(d, "transformation", "global_transformation"), origin, "transformation",
                  "global_transformation")
    return _keep_for_report(r, "ptreg register", src, tgt, None, None, origin)


@_renamed(sigma2_init="sigma2", tune=lambda v: {"no_tune": not v})
def emicp(source: ArrayLike, target: ArrayLike, *, sigma2: Optional[float] = None,
          sigma2_final: Optional[float] = None, sigma_factor: Optional[float] = None, d02: Optional[float] = None,
          max_iter: Optional[int] = None, tol: Optional[float] = None, init: Optional[Matrix] = None,
          precision: str = "fp32", device: str = "auto", no_tune: bool = False) -> Result:
    """EM-ICP (Granger & Pennec; Tamaki et al.): every source point softly paired
    with every target point by Gaussian weights, sigma^2 annealed from
    ``sigma2`` down to ``sigma2_final`` by ``sigma_factor`` per iteration (the
    defaults scale with the clouds), in ``precision`` ``"fp32"``, ``"fp16"`` or
    ``"fp64"``, on ``device``, as ``ptreg emicp``. The engine runs the variant
    ``ptreg tune`` found fastest on this machine for this problem size (its
    cache), else (``no_tune``) the built-in one. Clouds far from zero are
    registered about one origin; ``init`` and the transform are the world's.
    Returns ``transformation``, ``fitness``, ``rmse``, ``iterations``, ``stop_reason``, ``gpts`` (10^9 pair terms per second),
    ``variant`` (``source`` ``"tuned"`` or ``"default"``, the cache's
    ``size_class``, and each engine knob) ..."""
    origin = _frame(source, target)
    src, tgt = _local(source, origin, "source"), _local(target, origin, "target")
    d = _core.emicp(src, tgt, not no_tune, sigma2=sigma2,
                    sigma2_final=sigma2_final, sigma_factor=sigma_factor, d02=d02, max_iter=max_iter, tol=tol,
                    init=_matrix(_transform_to_local(init, origin), "init"), precision=precision, device=device)
    r = _in_world(_with_transform(d, "transformation"), origin, "transformation")
    return _keep_for_report(r, "ptreg emicp", src, tgt, init, None, origin)


class CPDResult(Result):
    """:func:`cpd`'s result: ``moved`` (the source moved onto the target, (M, 3)),
    ``transformation`` (rigid, similarity, affine: 4 x 4, the world's; deformable:
    the identity), ``scale``, ``sigma2``, ``iterations``, ``stop_reason``,
    ``cg_iterations``, ``time_ms``, ``gpts`` ... (the keys of ``ptreg cpd
    --json``); :meth:`warp` moves other points by the same transform or field."""

    def warp(self, points: ArrayLike) -> np.ndarray:
        """``points`` (K, 3) moved as the source was: through ``transformation``,
        or (deformable) by x + v(x), v(x) = sum_j exp(-|x - y_j|^2 / (2 beta^2)) w_j
        over the source points y_j and the field's coefficients w_j."""
        origin = self.__dict__["_origin"]
        x = _local(points, origin)
        out = np.empty_like(x, dtype=np.float32)
        field = self.__dict__["_field"]
        T = np.ascontiguousarray(_transform_to_local(self["transformation"], origin), dtype=np.float64)
        _core.cpd_warp(self["transform"], T.reshape(1, 16), float(self["beta"]), field[0], field[1], x, out)
        return _world_points(out, origin)


def cpd(source: ArrayLike, target: ArrayLike, *, transform: str = "rigid", w: float = 0.0, beta: float = 2.0,
        lambda_: float = 2.0, max_iter: int = 100, tol: Optional[float] = None, sigma2: Optional[float] = None,
        low_rank: int = 0, precondition_rank: Optional[int] = None, cg_iter: Optional[int] = None,
        cg_tol: Optional[float] = None, precision: str = "fp32", device: str = "auto") -> CPDResult:
    """Coherent Point Drift (Myronenko & Song) of ``source`` onto ``target``, as
    ``ptreg cpd``: ``transform`` ``"rigid"``, ``"similarity"``, ``"affine"`` or
    ``"deformable"`` (a smooth field of Gaussian width ``beta``, in the clouds'
    units, kept smooth by ``lambda_``, pycpd's alpha); ``w`` the outliers' share
    in [0, 1); ``sigma2`` the first variance (default from the data); ``tol``
    the objective's relative change to stop at (0: every iteration). The
    options and defaults are pycpd's. ``low_rank`` K > 0 replaces the field's
    Gaussian matrix by its top K eigenpairs (the paper's fast variant).
    NumPy arrays and Open3D clouds in; memory O(M + N), never an M x N matrix.
    Returns a :class:`CPDResult` (``moved``, ``transformation``, ...; ``warp``)."""
    origin = _frame(source, target)
    src, tgt = _local(source, origin, "source"), _local(target, origin, "target")
    moved = np.empty((len(src), 3), dtype=np.float32)
    deformable = transform == "deformable"
    centres = np.empty((len(src), 3)) if deformable else None
    coefficients = np.empty((len(src), 3)) if deformable else None
    options = dict(transform=transform, w=w, beta=beta, max_iter=max_iter, tol=tol, sigma2=sigma2,
                   low_rank=low_rank, precondition_rank=precondition_rank, cg_iter=cg_iter,
                   cg_tol=cg_tol, precision=precision, device=device)
    options["lambda"] = lambda_
    d = _core.cpd(src, tgt, moved, centres, coefficients, **{k: v for k, v in options.items() if v is not None})
    r = CPDResult(_in_world(_with_transform(d, "transformation"), origin, "transformation"))
    r["moved"] = _world_points(moved, origin)
    r.__dict__["_origin"] = origin
    r.__dict__["_field"] = (centres, coefficients)
    return r


def _concatenated(clouds: Sequence[ArrayLike], name: str) -> tuple:
    """(all points as one (N, 3) float32 array, offsets: count + 1 uint64)."""
    parts = [_points(c, f"{name}[{i}]") for i, c in enumerate(clouds)]
    offsets = np.zeros(len(parts) + 1, dtype=np.uint64)
    np.cumsum([len(c) for c in parts], out=offsets[1:])
    points = np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.float32)
    return np.ascontiguousarray(points, dtype=np.float32), offsets


@_renamed(sigma2_init="sigma2")
def batch(sources: Sequence[ArrayLike], target: Optional[ArrayLike] = None, *,
          targets: Optional[Sequence[ArrayLike]] = None, translation: bool = True,
          sigma2: Optional[float] = None, sigma2_final: Optional[float] = None,
          sigma_factor: Optional[float] = None, d02: Optional[float] = None, max_iter: Optional[int] = None,
          tol: Optional[float] = None, device: str = "auto") -> Result:
    """Many small EM-ICP registrations at once (the atom-probe case: millions of
    neighborhoods onto a reference motif): each of ``sources`` ((n_i, 3) arrays)
    onto the one ``target``, or onto its own of ``targets``. ``translation=False``
    fits rotations only (about the origin, where both are centred). The same bits
    for any thread count.

    Returns a :class:`Result`: ``transformations`` (count, 4, 4), ``iterations``,
    ``stop_reasons`` (names), and the fields of ``ptreg batch --json``'s result
    (``ptreg help --man-json batch``): ``register_ms`` (also under its older name
    ``time_ms``), ``pairs_per_s``, ``gpts``, ``pair_terms``, ``isa``."""
    if (target is None) == (targets is None):
        raise ArgumentError("batch: give either one shared target or per-pair targets")
    if _frame(*sources, target, *(targets or ())) != _ZERO:
        # float32 would round them, and a rotation-only fit turns about the origin: no silent re-expression
        raise ArgumentError("batch: points far from zero (float64 world coordinates): centre each neighborhood "
                            "and motif first (batch fits small sets about their own origin)")
    src, src_off = _concatenated(sources, "sources")
    if target is not None:
        tgt, tgt_off = _points(target, "target"), None
    else:
        if len(targets) != len(sources):
            raise ArgumentError(f"batch: {len(sources)} sources against {len(targets)} targets")
        tgt, tgt_off = _concatenated(targets, "targets")
    count = len(sources)
    transforms = np.empty((count, 16), dtype=np.float64)
    iterations = np.empty(count, dtype=np.int32)
    stops = np.empty(count, dtype=np.int32)
    stats = _core.batch(src, src_off, tgt, tgt_off, transforms, iterations, stops, translation=int(translation),
                        sigma2=sigma2, sigma2_final=sigma2_final, sigma_factor=sigma_factor, d02=d02,
                        max_iter=max_iter, tol=tol, device=device)
    r = Result(stats)
    r["transformations"] = transforms.reshape(count, 4, 4)
    r["iterations"] = iterations
    r["stop_reasons"] = [_core.stop_reason_name(int(s)) for s in stops]
    return r


# ---- volumes ---------------------------------------------------------------------

def _threshold_mode(kwargs: dict) -> None:
    """harris3d's old threshold_mode=: "relative" made threshold= the
    relative one (now relative=, as --relative), "absolute" the absolute one
    (now threshold= alone, as --threshold)."""
    mode = kwargs.pop("threshold_mode")
    if mode not in ("relative", "absolute"):
        raise ArgumentError(f"harris3d: threshold_mode {mode!r} is not relative or absolute")
    _warnings.warn("ptreg.harris3d: threshold_mode= is deprecated: give relative=R (--relative) or threshold=T "
                   "(absolute, --threshold)", DeprecationWarning, stacklevel=3)
    if mode == "relative" and "threshold" in kwargs:
        kwargs["relative"] = kwargs.pop("threshold")


def _old_threshold_mode(fn):
    @_functools.wraps(fn)
    def call(*args, **kwargs):
        if "threshold_mode" in kwargs:
            _threshold_mode(kwargs)
        return fn(*args, **kwargs)
    return call


@_old_threshold_mode
@_zero_unset("sigma", "top")
@_renamed(tune=lambda v: {"no_tune": not v}, k="kappa")
def harris3d(volume: Union[Volume, np.ndarray], *, window: Optional[int] = None, sigma: Optional[float] = None,
             kappa: Optional[float] = None, threshold: Optional[float] = None, relative: Optional[float] = None,
             min_distance: Optional[float] = None, top: Optional[int] = None, border: Optional[str] = None,
             scores: bool = False, device: str = "auto", no_tune: bool = False) -> Result:
    """3-D Harris interest points of a volume (a :class:`Volume` or an array
    indexed ``[z, y, x]``), as ``ptreg harris3d``: score det(M) - kappa tr(M)^3 of
    the Gaussian-weighted gradient tensor over a ``window``^3 neighborhood
    (default 5); keypoints above ``threshold`` (absolute) or ``relative`` times
    the largest score (default 0.01; with ``top`` and neither: every positive
    maximum, as the command line), local maxima of their 26 neighbors,
    ``min_distance`` apart, the best ``top``.

    The tiling (or a device's method) is the one ``ptreg tune --kernel
    harris`` found fastest here unless ``no_tune``; the scores' bits are the
    same either way.

    Returns a :class:`Result`: ``keypoints`` (a structured array of x, y, z,
    score, best first), ``max_score``, ``threshold`` (absolute), ``time_ms``,
    ``variant`` (as :func:`emicp`'s), and with ``scores=True`` the score volume
    ``[z, y, x]``."""
    if threshold is not None and relative is not None:
        raise ArgumentError("harris3d: threshold (absolute) and relative exclude each other")
    if relative is not None and not 0 <= relative <= 1:
        raise ArgumentError(f"harris3d: relative {relative} is not in [0, 1]")
    if threshold is not None and 0 < threshold <= 1:
        # threshold= was relative until issue 47: a value that reads like one is said, for one release
        _warnings.warn("ptreg.harris3d: threshold= is absolute now, as --threshold; give relative= for a share "
                       "of the largest score", FutureWarning, stacklevel=3)
    mode = "absolute" if threshold is not None else "relative"
    if threshold is None:
        threshold = 0.0 if top is not None and relative is None else relative  # --top alone: every maximum
    tune = not no_tune
    arr, spacing, origin = _volume_array(volume)
    nz, ny, nx = arr.shape
    d = Result(_core.harris3d(arr, (nx, ny, nz), _voxel_type(arr), list(spacing), list(origin), bool(scores),
                              bool(tune), window=window, sigma=sigma, kappa=kappa, threshold=threshold,
                              threshold_mode=mode, min_distance=min_distance, top=top, border=border,
                              device=device))
    d["keypoints"] = np.frombuffer(d["keypoints"], dtype=KEYPOINT_DTYPE)
    if scores:
        d["scores"] = np.frombuffer(d["scores"], dtype=np.float32).reshape(nz, ny, nx)
    return d


# ---- LDDMM ---------------------------------------------------------------------

_LDDMM_FLOW = ("sigma", "steps", "integrator", "device")


class LDDMMResult(Result):
    """:func:`lddmm`'s result: ``p0`` (the initial momenta), ``q1`` (the template
    shot to t = 1), ``objective``, ``iterations``, ``stop_reason``, distances before
    and after; :meth:`warp` moves any points by the same flow."""

    def warp(self, points: ArrayLike) -> np.ndarray:
        """``points`` (M, 3) moved by the diffeomorphism found (float64)."""
        return warp(self["q0"], self["p0"], points, **{k: self["options"][k] for k in _LDDMM_FLOW})


@_renamed(time_points="steps", lam="lambda_")
def lddmm(template: ArrayLike, target: ArrayLike, *, sigma: float = 1.0, steps: int = 20,
          lambda_: float = 1000.0, gamma: float = 1.0, max_iter: int = 400, gtol: Optional[float] = None,
          ftol: Optional[float] = None, integrator: str = "euler", precision: str = "fp32",
          init: str = "scaled", device: str = "auto") -> LDDMMResult:
    """LDDMM landmark matching by geodesic shooting, as ``ptreg lddmm``
    (Gaussian kernel of width ``sigma``, ``steps`` time points, ``lambda_``
    (--lambda) the data term's weight, ``gamma`` the energy's), optimised by
    L-BFGS, in O(n) memory. ``template`` and ``target``: (n, 3) landmarks in
    correspondence."""
    q0 = _points64(template, "template")
    options = dict(sigma=sigma, steps=steps, lambda_=lambda_, gamma=gamma, max_iter=max_iter, gtol=gtol,
                   ftol=ftol, integrator=integrator, precision=precision, init=init, device=device)
    library = {k.rstrip("_"): v for k, v in options.items()}  # lambda_ is --lambda
    d = LDDMMResult(_core.lddmm_register(q0, _points64(target, "target"), **library))
    d["p0"] = _rows(d["p0"], np.float64, 3)
    d["q1"] = _rows(d["q1"], np.float64, 3)
    d["q0"] = q0
    d["options"] = options
    return d


@_renamed(time_points="steps")
def warp(q0: ArrayLike, p0: ArrayLike, points: ArrayLike, *, sigma: float = 1.0, steps: int = 20,
         integrator: str = "euler", device: str = "auto") -> np.ndarray:
    """``points`` moved by the flow shot from landmarks ``q0`` with momenta ``p0``
    (with the ``sigma``, ``steps`` and ``integrator`` of the registration)."""
    x = _points64(points, "points")
    out = np.empty_like(x)
    _core.lddmm_warp(_points64(q0, "q0"), _points64(p0, "p0"), x, out, sigma=sigma, steps=steps,
                     integrator=integrator, device=device)
    return out


# ---- the autotuner ---------------------------------------------------------------

_TUNE_SIZES = {"pair": 20000, "harris": 256, "fpfh": 50000}


@_renamed(method="search", sample_fraction="sample", budget_s="budget")
def tune(kernel: str = "pair", size: Optional[int] = None, *, precision: str = "fp32", search: str = "auto",
         sample: Optional[float] = None, reps: Optional[int] = None, budget: Optional[float] = None,
         confirm: Optional[int] = None, min_gain: Optional[float] = None, seed: Optional[int] = None) -> Result:
    """Searches a CPU kernel's variants on this machine, as ``ptreg tune`` does:
    ``"pair"`` (EM-ICP's pair engine: threads, column tile, row block, row
    vectors, loop order; ``size`` points a side, default 20000), ``"harris"``
    (threads and rows per tile; a ``size``^3 volume, default 256) or ``"fpfh"``
    (threads; ``size`` points, default 50000), by ``search`` (``"auto"``,
    ``"exhaustive"``, ``"coordinate"`` or ``"halving"``; ``sample`` the share
    measured, ``budget`` seconds). Every candidate must reproduce the
    default's output; the winner must beat the default by ``min_gain`` in a final
    confirmation. Nothing is cached here (``ptreg tune`` writes the cache that
    later runs use, ``emicp`` among them). Returns ``winner`` (parameter ->
    value), ``winner_seconds``, ``default_seconds``, ``gain``, ``default_kept``,
    ``candidates``, ``method``, ``machine`` and ``elapsed_s``."""
    if kernel not in _TUNE_SIZES:
        raise ArgumentError(f"tune: kernel {kernel!r} is not pair, harris or fpfh")
    if precision not in ("fp32", "fp16"):
        raise ArgumentError(f"tune: precision {precision!r} is not fp32 or fp16")
    return Result(_core.tune(kernel, int(size or _TUNE_SIZES[kernel]), precision == "fp16", search=search,
                             sample=sample, reps=reps, budget=budget, confirm=confirm, min_gain=min_gain, seed=seed))


# ---- many scans ------------------------------------------------------------------

@_old_global_method
@_renamed(refine="method", graph_max_iter="graph_iter")
def multiway(scans: Sequence[ArrayLike], *, normals: Optional[Sequence[Optional[ArrayLike]]] = None,
             pairs: Optional[ArrayLike] = None, voxel: Optional[float] = None, pair_neighbors: Optional[int] = None,
             global_: str = "ransac", method: str = "plane", refine_dist: Optional[float] = None,
             refine_iter: Optional[int] = None, min_fitness: Optional[float] = None, anchor: int = 0,
             joint_refine: Optional[int] = None, edge_prune_threshold: Optional[float] = None,
             preference_loop_closure: Optional[float] = None, graph_iter: Optional[int] = None,
             seed: Optional[int] = None) -> Result:
    """Many overlapping scans of one object into the frame of ``scans[anchor]``
    (``ptreg multiway``): each scan's features once, candidate pairs (every pair;
    ``pair_neighbors`` K: each scan's K most similar and its successor; or
    ``pairs``, (P, 2) scan numbers, scan i onto scan j) registered by RANSAC
    (``global_="fgr"``: FGR; --global) and ICP (``method``), the best pairs'
    spanning tree placing the scans, the pose graph solved with a line process
    over the other pairs, then the joint refinement. Scans far from zero are
    placed about one origin; the poses are the world's.

    Returns a :class:`Result`: ``poses`` (count, 4, 4), each scan into the
    anchor's frame; ``placed`` (False: no kept pair reaches the scan, its pose
    is the identity); ``edges`` (a dict per candidate pair: ``source``,
    ``target``, ``transformation``, ``fitness``, ``rmse``, ``uncertain``,
    ``kept``, ``confidence``); ``voxel``; each stage's time."""
    origin = _frame(*scans)
    pts = [_local(c, origin, f"scans[{i}]") for i, c in enumerate(scans)]
    nrm = [None] * len(pts) if normals is None else [_optional_points(n, f"normals[{i}]")
                                                     for i, n in enumerate(normals)]
    pr = None if pairs is None else np.ascontiguousarray(pairs, dtype=np.uint64).reshape(-1, 2)
    d = _core.multiway(pts, nrm, pr, voxel=voxel, pair_neighbors=pair_neighbors, method=method,
                       refine_dist=refine_dist, refine_iter=refine_iter, min_fitness=min_fitness, anchor=anchor,
                       joint_refine=joint_refine, edge_prune_threshold=edge_prune_threshold,
                       preference_loop_closure=preference_loop_closure, graph_iter=graph_iter, seed=seed,
                       **{"global": global_})
    r = Result(d)
    r["poses"] = np.stack([_transform_to_world(p, origin) for p in d["poses"]]) if d["poses"] else \
        np.zeros((0, 4, 4))
    for e in r["edges"]:
        e["transformation"] = _transform_to_world(e["transformation"], origin)
    return r


@_renamed(max_turn_deg="max_turn", recover=lambda v: {"no_recover": not v})
def track(model: ArrayLike, frames: Iterable, *, model_normals: Optional[ArrayLike] = None,
          rate: float = 10.0, predict: str = "constant-velocity", init: Optional[Matrix] = None,
          method: str = "plane", nn: str = "auto", max_iter: Optional[int] = None, max_dist: Optional[float] = None,
          tol: Optional[float] = None, min_fitness: Optional[float] = None, max_rmse: Optional[float] = None,
          max_speed: Optional[float] = None, max_turn: Optional[float] = None, no_recover: bool = False,
          visible_only: Optional[int] = None, sensor_origin: Optional[Sequence[float]] = None,
          voxel: Optional[float] = None, device: str = "auto") -> Iterator[Result]:
    """Every frame of a sensor registered against one model, in order, as it
    arrives (``ptreg track``): yields a :class:`Result` per frame as soon as its
    pose is known. ``frames``: (N, 3) arrays, or (time in seconds, array) pairs
    (else frame k is taken at k / ``rate``). Each frame starts from a
    prediction (``predict``: ``"constant-velocity"`` or ``"none"``), is
    registered by ICP against the model (built, and uploaded to ``device``,
    once), and checked: ``min_fitness``, ``max_rmse``, ``max_speed`` (model units
    per second) and ``max_turn`` (degrees per second); a frame that fails is
    recovered by global registration against the model (unless ``no_recover``).
    With ``visible_only`` (1, the default) each frame is registered against
    the model points whose outward normal faces the sensor (at
    ``sensor_origin`` in the frames' coordinates, default 0) from the
    predicted pose; ``voxel`` thins each frame to voxel centroids first.
    A model far from zero is tracked about its origin; ``init`` and the poses
    are the world's.

    Each Result: ``transformation`` (4 x 4, takes the frame into the model's
    frame), ``predicted``, ``state`` (``"tracked"``, ``"recovered"`` or
    ``"lost"``), ``iterations``, ``fitness``, ``rmse``, ``latency_ms``, ``time``, ``points``."""
    if not rate > 0:
        raise ArgumentError(f"track: rate {rate} must be positive")
    origin = _frame(model)
    if model_normals is None:
        model_normals = _cloud_normals(model)
    tracker = _core.tracker_create(_local(model, origin, "model"), _optional_points(model_normals, "model_normals"),
                                   predict=predict, init=_matrix(_transform_to_local(init, origin), "init"),
                                   method=method, nn=nn, max_iter=max_iter, max_dist=max_dist, tol=tol,
                                   min_fitness=min_fitness, max_rmse=max_rmse, max_speed=max_speed,
                                   max_turn_deg=max_turn, recover=int(not no_recover), visible_only=visible_only,
                                   sensor_origin=_sensor_local(sensor_origin, origin),
                                   voxel=voxel, device=device)
    for k, item in enumerate(frames):
        if isinstance(item, tuple) and len(item) == 2:
            when, frame = float(item[0]), item[1]
        else:
            when, frame = k / rate, item
        d = _core.tracker_push(tracker, _local(frame, origin, f"frames[{k}]"), when)
        r = _in_world(_with_transform(d, "transformation", "predicted"), origin, "transformation", "predicted")
        yield r


class Odometry:
    """LiDAR odometry as the scans come (``ptreg odometry``; :func:`odometry`
    iterates over one): :meth:`push` registers the next scan against the local
    map of those before and returns its :class:`Result`; :meth:`map` is the
    map's points (float64, the first scan's frame), :meth:`summary` the run's
    counts and latency percentiles. The keywords are the command's options;
    ``deskew`` moves each point by the motion at its time in the sweep (the
    ``times`` given to :meth:`push`, else from its azimuth as the command
    does); ``map_whole`` keeps the whole run's map too, a point per voxel;
    ``device`` is where the ICP steps run (auto: a GPU with double precision,
    else the CPU)."""

    def __init__(self, *, max_range: Optional[float] = None, min_range: Optional[float] = None,
                 voxel: Optional[float] = None, max_points_per_voxel: Optional[int] = None,
                 initial_threshold: Optional[float] = None, min_motion: Optional[float] = None,
                 max_iter: Optional[int] = None, tol: Optional[float] = None, deskew: bool = False,
                 map_whole: bool = False, device: str = "auto"):
        options = dict(max_range=max_range, min_range=min_range, voxel=voxel,
                       max_points_per_voxel=max_points_per_voxel, initial_threshold=initial_threshold,
                       min_motion=min_motion, max_iter=max_iter, tol=tol)
        self._deskew = bool(deskew)
        self._whole = bool(map_whole)
        self._od = _core.odometry_create(deskew=int(self._deskew), keep_all=int(self._whole), device=str(device),
                                         **{k: v for k, v in options.items() if v is not None})

    def push(self, frame: Any, times: Optional[ArrayLike] = None) -> Result:
        """Registers the next scan: an (N, 3) array, a :class:`Cloud` or a
        cloud file's path (KITTI's .bin among them). ``transformation`` takes
        it into the first scan's frame; ``points``, ``registered``, ``pairs``,
        ``iterations``, ``sigma``, ``correction``, ``map_points`` and
        ``latency_ms`` as ``ptreg odometry --json`` has them."""
        if isinstance(frame, (str, _os.PathLike)):
            frame = read_cloud(str(frame)).points
        pts = _points(frame, "frame")
        if self._deskew and times is None:
            times = (np.arctan2(pts[:, 1].astype(np.float64), pts[:, 0]) + np.pi) / (2 * np.pi)
        t = None if times is None or not self._deskew else np.ascontiguousarray(times, dtype=np.float32)
        return _with_transform(_core.odometry_push(self._od, pts, t), "transformation")

    def map(self, whole: bool = False) -> np.ndarray:
        """The local map's points (``whole``: the whole run's, which needs
        ``map_whole``), (N, 3) float64 in the first scan's frame."""
        if whole and not self._whole:
            raise ArgumentError("odometry: the whole run's map was not kept: give map_whole=True")
        data, origin = _core.odometry_map(self._od, bool(whole))
        return np.frombuffer(data, dtype=np.float32).reshape(-1, 3).astype(np.float64) + np.array(origin)

    def summary(self) -> Result:
        """``frames``, ``empty``, ``latency_ms`` (p50, p95, p99, max, mean),
        ``frames_per_s``, ``distance``, ``map_points``, ``map_bytes``."""
        return Result(_core.odometry_summary(self._od))


def odometry(frames: Iterable, *, max_range: Optional[float] = None, min_range: Optional[float] = None,
             voxel: Optional[float] = None, max_points_per_voxel: Optional[int] = None,
             initial_threshold: Optional[float] = None, min_motion: Optional[float] = None,
             max_iter: Optional[int] = None, tol: Optional[float] = None, deskew: bool = False,
             map_whole: bool = False, device: str = "auto") -> Iterator[Result]:
    """LiDAR odometry without a map (``ptreg odometry``): each scan of
    ``frames`` (arrays, :class:`Cloud` objects, file paths, or (points, times)
    pairs for ``deskew``) registered against a local map of those before, as
    KISS-ICP does; yields each scan's :class:`Result` as soon as its pose is
    known (``transformation``: into the first scan's frame). For the map and
    the summary, use :class:`Odometry` itself."""
    od = Odometry(max_range=max_range, min_range=min_range, voxel=voxel, max_points_per_voxel=max_points_per_voxel,
                  initial_threshold=initial_threshold, min_motion=min_motion, max_iter=max_iter, tol=tol,
                  deskew=deskew, map_whole=map_whole, device=device)
    for item in frames:
        if isinstance(item, tuple) and len(item) == 2:
            yield od.push(item[0], item[1])
        else:
            yield od.push(item)


class Localizer(Odometry):
    """LiDAR localization in a prior map (``ptreg localize``): each scan
    registered as :class:`Odometry` registers it, but against the tiles of
    ``prior`` around the predicted pose, read as the path reaches them and
    dropped behind it. ``prior`` is a tiled map (.ptm) or a cloud file of any
    size, tiled first (``tile`` metres; kept at ``save_tiles``, else in a
    scratch file); ``init`` is the first scan's pose in the map's coordinates
    (4 x 4). :meth:`push` gives each scan's pose in the map's coordinates and
    its ``state`` (tracked, recovered or lost), ``fitness`` and ``tiles``;
    :meth:`map` is the submap held."""

    def __init__(self, prior: str, init: ArrayLike, *, tile: Optional[float] = None,
                 save_tiles: Optional[str] = None, radius: Optional[float] = None,
                 prefetch: Optional[float] = None, min_fitness: Optional[float] = None, no_recover: bool = False,
                 max_range: Optional[float] = None, min_range: Optional[float] = None,
                 voxel: Optional[float] = None, max_points_per_voxel: Optional[int] = None,
                 initial_threshold: Optional[float] = None, min_motion: Optional[float] = None,
                 max_iter: Optional[int] = None, tol: Optional[float] = None, deskew: bool = False,
                 device: str = "auto"):
        prior = str(prior)
        if prior.lower().endswith(".ptm") and (tile is not None or save_tiles is not None):
            raise ArgumentError(f"localize: {prior} is tiled already: tile and save_tiles are for a cloud")
        cell = voxel if voxel is not None else (max_range if max_range is not None else 100.0) / 100.0
        options = dict(radius=radius, prefetch=prefetch, min_fitness=min_fitness, max_range=max_range,
                       min_range=min_range, voxel=voxel, max_points_per_voxel=max_points_per_voxel,
                       initial_threshold=initial_threshold, min_motion=min_motion, max_iter=max_iter, tol=tol)
        self._deskew = bool(deskew)
        self._whole = False
        self._od, self._tiles = _core.localizer_create(
            prior, None if save_tiles is None else str(save_tiles), float(tile if tile is not None else 50.0),
            float(cell), int(max_points_per_voxel if max_points_per_voxel is not None else 20),
            init=_matrix(init, "init"), recover=int(not no_recover), deskew=int(self._deskew), device=str(device),
            **{k: v for k, v in options.items() if v is not None})


def localize(prior: str, frames: Iterable, init: ArrayLike, *, tile: Optional[float] = None,
             save_tiles: Optional[str] = None, radius: Optional[float] = None, prefetch: Optional[float] = None,
             min_fitness: Optional[float] = None, no_recover: bool = False, max_range: Optional[float] = None,
             min_range: Optional[float] = None, voxel: Optional[float] = None,
             max_points_per_voxel: Optional[int] = None, initial_threshold: Optional[float] = None,
             min_motion: Optional[float] = None, max_iter: Optional[int] = None, tol: Optional[float] = None,
             deskew: bool = False, device: str = "auto") -> Iterator[Result]:
    """LiDAR localization in a prior map (``ptreg localize``): each scan of
    ``frames`` (as :func:`odometry` takes them) registered against the tiles
    of ``prior`` around its predicted pose; yields each scan's :class:`Result`
    (``transformation`` in the map's coordinates, ``state``, ``fitness``). For
    the submap and the summary, use :class:`Localizer` itself."""
    loc = Localizer(prior, init, tile=tile, save_tiles=save_tiles, radius=radius, prefetch=prefetch,
                    min_fitness=min_fitness, no_recover=no_recover, max_range=max_range, min_range=min_range,
                    voxel=voxel, max_points_per_voxel=max_points_per_voxel, initial_threshold=initial_threshold,
                    min_motion=min_motion, max_iter=max_iter, tol=tol, deskew=deskew, device=device)
    for item in frames:
        if isinstance(item, tuple) and len(item) == 2:
            yield loc.push(item[0], item[1])
        else:
            yield loc.push(item)


def read_kitti_poses(path: str) -> np.ndarray:
    """A KITTI pose file (12 numbers a line, [R | t] row by row: the odometry
    benchmark's poses, ``ptreg odometry --poses kitti``), or a TUM trajectory,
    as (N, 4, 4) float64. A line that is not a rigid pose fails, naming the
    file and the line."""
    _times, poses, _format = _core.read_trajectory(str(path))
    return np.array(poses, dtype=np.float64).reshape(-1, 4, 4)


def write_kitti_poses(path: str, poses: ArrayLike) -> None:
    """Writes (N, 4, 4) (or (N, 3, 4)) poses as a KITTI pose file, atomically."""
    p = np.asarray(poses, dtype=np.float64)
    if p.ndim != 3 or p.shape[1:] not in ((4, 4), (3, 4)):
        raise ArgumentError(f"write_kitti_poses: poses of shape {p.shape}: (N, 4, 4) or (N, 3, 4)")
    path = str(path)
    tmp = f"{path}.ptreg-tmp-{_os.getpid()}"
    try:
        np.savetxt(tmp, p[:, :3, :].reshape(-1, 12), fmt="%.9e")
        _os.replace(tmp, path)
    finally:
        if _os.path.exists(tmp):
            _os.unlink(tmp)


def _sensor_local(sensor_origin: Optional[Sequence[float]], origin: tuple) -> Optional[list]:
    """track's sensor position in the frames' coordinates, shifted with the
    frames about a far model's origin (None: the library's default, 0)."""
    if sensor_origin is None and origin == _ZERO:
        return None
    given = (0.0, 0.0, 0.0) if sensor_origin is None else tuple(float(x) for x in sensor_origin)
    if len(given) != 3:
        raise ArgumentError(f"track: sensor_origin must be 3 numbers, not {len(given)}")
    return [g - o for g, o in zip(given, origin)]


def _trajectory_arg(t: Any, name: str) -> Any:
    """A trajectory for _core.eval_trajectory: a path as it is, else
    (times, poses[, timed]) or an (N, 4, 4) array (times its indices)."""
    if isinstance(t, (str, bytes)) or hasattr(t, "__fspath__"):
        return _os.fsdecode(t)
    if isinstance(t, tuple) and len(t) in (2, 3):
        times = np.ascontiguousarray(t[0], dtype=np.float64).reshape(-1)
        poses = np.ascontiguousarray(t[1], dtype=np.float64).reshape(-1, 16)
        timed = bool(t[2]) if len(t) == 3 else True
        return times, poses, timed
    poses = np.ascontiguousarray(t, dtype=np.float64)
    if poses.ndim != 3 or poses.shape[1:] != (4, 4):
        raise ArgumentError(f"eval_trajectory: {name} must be a path, (times, poses) or an (N, 4, 4) array")
    return np.arange(len(poses), dtype=np.float64), poses.reshape(-1, 16), False


def eval_trajectory(estimate: Any, reference: Any, *, align: str = "se3", associate: str = "auto",
                    max_diff: float = 0.02, offset: float = 0.0, delta: float = 1, delta_unit: str = "frames",
                    kitti_lengths: Optional[Sequence[float]] = None) -> Result:
    """A trajectory against the true one (``ptreg eval``): ATE, RPE and the
    KITTI metric. ``estimate`` and ``reference``: a TUM or KITTI pose file's
    path, ``(times, poses)`` (``poses`` (N, 4, 4); add a third item ``False``
    when the times are indices, as KITTI's), or an (N, 4, 4) array (paired by
    index). ``associate``: ``"time"`` (the nearest timestamps within
    ``max_diff`` seconds after adding ``offset`` to the estimate's, greedily),
    ``"index"`` or ``"auto"``; ``align``: ``"se3"``, ``"sim3"`` or ``"none"``;
    RPE over ``delta`` ``delta_unit`` (``"frames"``, ``"m"``, ``"s"``); the KITTI
    segments' ``kitti_lengths`` (default 100, ..., 800).

    The Result: ``association``, ``align``, ``alignment`` (``rotation`` 3 x 3,
    ``translation``, ``scale``), ``ate`` and ``rpe`` (each ``pairs``,
    ``translation`` and ``rotation_deg``: rmse, mean, median, std, min, max),
    ``kitti`` (``translation_percent``, ``rotation_deg_per_m``, ``segments``,
    ``lengths``; None when no segment fits), and per pair ``time``,
    ``translation_error``, ``rotation_error_deg``, ``estimate_index``,
    ``reference_index``, ``aligned_xyz`` and ``reference_xyz`` as arrays.
    docs/ALGORITHMS.md, "Evaluating trajectories", has the definitions."""
    d = _core.eval_trajectory(_trajectory_arg(estimate, "estimate"), _trajectory_arg(reference, "reference"),
                              None if kitti_lengths is None else [float(x) for x in kitti_lengths],
                              align=align, associate=associate, max_diff=max_diff, offset=offset, delta=delta,
                              delta_unit=delta_unit)
    for key in ("time", "translation_error", "rotation_error_deg"):
        d[key] = np.asarray(d[key], dtype=np.float64)
    for key in ("estimate_index", "reference_index"):
        d[key] = np.asarray(d[key], dtype=np.int64)
    for key in ("aligned_xyz", "reference_xyz"):
        d[key] = np.asarray(d[key], dtype=np.float64).reshape(-1, 3)
    d["alignment"]["rotation"] = np.asarray(d["alignment"]["rotation"]).reshape(3, 3)
    d["alignment"]["translation"] = np.asarray(d["alignment"]["translation"])
    return Result(d)


# ---- filters, evaluation, correspondences (issue 47: Open3D's and PCL's tools) ----

def _tools_local(*clouds: tuple[ArrayLike, str]) -> tuple[list, np.ndarray]:
    """The clouds as float32 (N, 3) arrays about one origin, and the origin:
    the first cloud's first point when that is far from zero (a UTM file's
    float64 world coordinates: float32 would lose their millimetres), else 0."""
    arrays = [_points64(c, name) for c, name in clouds]
    first = arrays[0]
    far = len(first) and np.max(np.abs(first[0])) >= 16384.0
    origin = first[0].copy() if far else np.zeros(3)
    return [np.ascontiguousarray(a - origin, dtype=np.float32) for a in arrays], origin


def _selected(points: ArrayLike, mask: bytearray) -> tuple[Cloud, np.ndarray]:
    """The points a filter kept (as given: float64 stays float64), their
    normals, and their indices in the input."""
    keep = np.frombuffer(mask, dtype=np.uint8).astype(bool)
    pts = np.asarray(_unwrapped(points))
    nrm = _cloud_normals(points)
    return (Cloud(pts[keep], None if nrm is None else np.asarray(nrm)[keep]),
            np.flatnonzero(keep))


def remove_statistical_outliers(points: ArrayLike, *, k: int = 20,
                                std_ratio: float = 2.0) -> tuple[Cloud, np.ndarray]:
    """Open3D's ``remove_statistical_outlier`` (PCL's StatisticalOutlierRemoval;
    ``ptreg filter --statistical``): a point is kept when its mean distance to
    its ``k`` nearest points (itself among them) is above 0 and below the mean
    of those means plus ``std_ratio`` sample standard deviations. Returns the
    kept points (a :class:`Cloud`, with the input's normals) and their indices
    in the input, as Open3D returns ``(cloud, ind)``."""
    (pts,), _ = _tools_local((points, "points"))
    return _selected(points, _core.statistical_outliers(pts, int(k), float(std_ratio)))


def remove_radius_outliers(points: ArrayLike, *, radius: float,
                           min_neighbors: int = 16) -> tuple[Cloud, np.ndarray]:
    """Open3D's ``remove_radius_outlier`` (``ptreg filter --radius``): a point is
    kept when at least ``min_neighbors`` other points lie at distance <
    ``radius`` (Open3D's ``nb_points``). Returns ``(Cloud, indices)``."""
    (pts,), _ = _tools_local((points, "points"))
    return _selected(points, _core.radius_outliers(pts, float(radius), int(min_neighbors)))


def random_downsample(points: ArrayLike, fraction: Optional[float] = None, *, count: Optional[int] = None,
                      seed: int = 1) -> Cloud:
    """``floor(fraction * N)`` points (Open3D's ``random_down_sample``), or
    ``count`` points, drawn without replacement by a generator seeded with
    ``seed``: the same points on every run; kept in the input's order
    (``ptreg filter --random``, ``--random-count``)."""
    if (fraction is None) == (count is None):
        raise ArgumentError("random_downsample: give a fraction or a count")
    n = len(_unwrapped(points))
    mask = _core.random_downsample(n, -1.0 if fraction is None else float(fraction),
                                   -1 if count is None else int(count), int(seed))
    return _selected(points, mask)[0]


def uniform_downsample(points: ArrayLike, every: int) -> Cloud:
    """Points 0, ``every``, 2 ``every``, ... (Open3D's ``uniform_down_sample``;
    ``ptreg filter --uniform``)."""
    return _selected(points, _core.uniform_downsample(len(_unwrapped(points)), int(every)))[0]


def _local_transform(T: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """A world transform as it acts about origin: t' = R o + t - o."""
    local = T.copy()
    local[:3, 3] = T[:3, :3] @ origin + T[:3, 3] - origin
    return local


def evaluate(source: ArrayLike, target: ArrayLike, max_dist: float,
             transform: Optional[Matrix] = None) -> Result:
    """Open3D's ``evaluate_registration`` (``ptreg evaluate``): each source
    point moved by ``transform`` (4 x 4, default identity) is paired with its
    nearest target point when that lies at distance < ``max_dist``. Returns a
    :class:`Result`: ``fitness`` (pairs / source points), ``inlier_rmse`` (over
    the pairs), ``correspondence_set`` ((K, 2) source and target indices, in
    source order) and ``correspondences`` (K)."""
    (s, t), origin = _tools_local((source, "source"), (target, "target"))
    T = np.eye(4) if transform is None else np.asarray(_matrix(transform, "transform")).reshape(4, 4)
    d = _core.evaluate(s, t, _local_transform(T, origin).ravel(), float(max_dist))
    pairs = d.pop("pairs")
    return Result(**d, correspondence_set=np.frombuffer(pairs, dtype=np.uint32).reshape(-1, 2).astype(np.int64))


def register_correspondences(source: ArrayLike, target: ArrayLike, correspondences: Any,
                             weights: Optional[Any] = None, *, ransac_dist: Optional[float] = None,
                             ransac_iter: int = 100000, confidence: float = 0.999, seed: int = 1) -> Result:
    """The rigid transform of given correspondences (``ptreg correspond``):
    ``correspondences`` (K, 2) source and target indices (Open3D's
    ``correspondence_set``), Horn's closed form weighted by ``weights`` (K,
    default all 1; Open3D's TransformationEstimationPointToPoint without
    them). With ``ransac_dist``, RANSAC over the pairs first (no checkers:
    Open3D's ``registration_ransac_based_on_correspondence``), then the
    weighted fit on its inliers; seeded, the same result every run. Returns a
    :class:`Result`: ``transformation`` (4 x 4), ``inliers`` (the pairs used)
    and ``ransac_hypotheses``."""
    pairs = np.asarray(correspondences)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or (pairs.size and not np.issubdtype(pairs.dtype, np.integer)):
        raise ArgumentError(f"correspondences: a (K, 2) array of indices is needed, got shape {pairs.shape}")
    if pairs.size and (pairs.min() < 0 or pairs.max() >= 2 ** 32 - 1):
        raise ArgumentError("correspondences: an index below 0 or beyond 2^32 - 2")
    if ransac_dist is not None and not ransac_dist > 0:
        raise ArgumentError(f"register_correspondences: ransac_dist {ransac_dist} must be positive")
    w = None if weights is None else np.ascontiguousarray(weights, dtype=np.float64).ravel()
    (s, t), origin = _tools_local((source, "source"), (target, "target"))
    T, inliers, hypotheses = _core.register_correspondences(
        s, t, np.ascontiguousarray(pairs, dtype=np.uint32), w,
        -1.0 if ransac_dist is None else float(ransac_dist), int(ransac_iter), float(confidence), int(seed))
    local = np.array(T, dtype=np.float64).reshape(4, 4)
    world = local.copy()
    world[:3, 3] = local[:3, 3] + origin - local[:3, :3] @ origin
    return Result(transformation=world, inliers=inliers, ransac_hypotheses=hypotheses)
