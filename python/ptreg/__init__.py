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
side. Errors are raised as :class:`ptreg.Error` subclasses with the library's
message, which names the file and the place where there is one.

Register two Open3D clouds::

    import open3d as o3d, ptreg
    source, target = (o3d.io.read_point_cloud(p) for p in ("a.ply", "b.ply"))
    result = ptreg.icp(source, target, method="plane", max_dist=0.05)
    print(result.transformation, result.fitness, result.rmse)

In a notebook a registration's result shows itself as ptreg's 3-D report
(``_repr_html_``) where the library was built with the viewer.
"""

from __future__ import annotations

import html
import json
from typing import Iterable, Iterator, Any, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import _core
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
    "icp", "register", "emicp", "batch", "harris3d", "lddmm", "warp", "tune", "multiway", "track",
    "to_open3d",
]

__version__: str = _core.version()

#: Points: an (N, 3) array, a :class:`Cloud` or an Open3D point cloud (legacy or tensor).
ArrayLike = Union[np.ndarray, Sequence[Sequence[float]], Any]
Matrix = Union[np.ndarray, Sequence[Sequence[float]]]

#: The voxel types of volumes, as NumPy dtypes (the library's names).
VOXEL_DTYPES = {"u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i16": np.int16,
                "u32": np.uint32, "i32": np.int32, "f32": np.float32, "f64": np.float64}

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
                + html.escape(page, quote=True) + '"></iframe>')

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
    ``dropped`` the points read with a non-finite coordinate."""
    points: np.ndarray
    normals: Optional[np.ndarray] = None
    dropped: int = 0


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
        raise ValueError(f"{name}: an (N, 3) array is needed, got shape {arr.shape}")
    return arr


def _points64(a: ArrayLike, name: str) -> np.ndarray:
    arr = np.ascontiguousarray(_unwrapped(a), dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name}: an (N, 3) array is needed, got shape {arr.shape}")
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
        raise ValueError(f"{name}: a 4 x 4 matrix is needed, got shape {arr.shape}")
    return arr.ravel().tolist()


def _keep_for_report(r: Result, title: str, source: np.ndarray, target: Any, init: Optional[Matrix],
                     curve: Optional[str]) -> Result:
    """Keeps what the report draws on the result, by reference: the arrays the
    call read (the caller's own where no conversion was needed)."""
    r._report_inputs = (title, source, target, init, curve)
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
                 curve: Optional[str]) -> str:
    """The report's HTML, made by the library (ptreg/report.h)."""
    index = target if isinstance(target, ModelIndex) else ModelIndex(target, delaunay=False)
    tgt = index.points if isinstance(target, ModelIndex) else target
    after = _moved(source, r["transformation"])
    distance = index.nearest(after)[1]
    layers = [("cloud", "target", tgt, 0x9E9E9E), ("cloud", "source before", _moved(source, init), 0xE0803A),
              ("values", "source after", after, distance, "distance to the target")]
    curves = []
    if curve and curve in r and len(r[curve]):
        curves.append((curve.upper() + " per iteration", curve, np.ascontiguousarray(r[curve], dtype=np.float64)))
    numbers = json.dumps(dict(r), default=_json_value)
    return _core.report_html(title, layers, curves, numbers)


def _rows(buffer: bytearray, dtype, width: int) -> np.ndarray:
    return np.frombuffer(buffer, dtype=dtype).reshape(-1, width)


def _with_transform(d: dict, *keys: str) -> Result:
    r = Result(d)
    for k in keys:
        r[k] = np.array(r[k], dtype=np.float64).reshape(4, 4)
    if "mse" in r:
        r["mse"] = np.array(r["mse"], dtype=np.float64)
    return r


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
        raise ValueError(f"{name}: {len(arr)} rows for {n} points")
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
    options take: ``"cpu"``, ``"cuda:0"``, ``"opencl:1"`` ...), ``name``,
    ``vendor``, ``platform``, ``version``, ``is_gpu``, ``for_testing`` (a CPU
    OpenCL driver, which ``"auto"`` never picks), ``standin`` (the CUDA
    driver stand-in of ptreg's tests, never a real GPU), ``memory_bytes``,
    ``compute_units`` and ``fp64``."""
    return _core.devices()


# ---- files -------------------------------------------------------------------

def read_cloud(path: str, format: Optional[str] = None) -> Cloud:
    """Reads a point cloud: PLY, PCD (ascii, binary, binary_compressed), XYZ/CSV/TXT,
    VTK, or an atom-probe POS/EPOS file; the format from the extension unless
    ``format`` names it. Points with a non-finite coordinate are dropped (counted
    in ``dropped``). Malformed files raise :class:`FormatError` naming the place.
    Points far from zero (UTM eastings and northings: docs/FORMATS.md) come as
    float64 world coordinates, which float32 would round to half a metre."""
    xyz, nrm, dropped, world = _core.read_cloud(str(path), format)
    points = _rows(xyz, np.float64 if world else np.float32, 3)
    return Cloud(points, None if nrm is None else _rows(nrm, np.float32, 3), dropped)


def write_cloud(path: str, points: ArrayLike, normals: Optional[ArrayLike] = None, *,
                format: Optional[str] = None, ascii: bool = False) -> None:
    """Writes a point cloud (PLY, PCD, XYZ, VTK or POS by extension or ``format``;
    binary unless ``ascii``), atomically: a failure leaves no partial file."""
    pts = _points(points)
    nrm = _normals_of(normals, points, "normals")
    _core.write_cloud(str(path), pts, nrm, format, bool(ascii))


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
        raise ValueError(f"volume: a 3-D array [z, y, x] is needed, got shape {arr.shape}")
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
    cube's mean normal made unit; in the order of each cube's first point."""
    xyz, nrm = _core.voxel_downsample(_points(points), _normals_of(normals, points, "normals"), float(voxel))
    return Cloud(_rows(xyz, np.float32, 3), None if nrm is None else _rows(nrm, np.float32, 3))


def normals(points: ArrayLike, *, k: int = 30, radius: float = 0.0, orientation: str = "viewpoint",
            viewpoint: Sequence[float] = (0.0, 0.0, 0.0), direction: Sequence[float] = (0.0, 0.0, 1.0),
            orient_k: int = 10, curvature: bool = False, device: str = "auto"):
    """Normals by PCA of each point's ``k`` nearest neighbors (within ``radius``
    when > 0: Open3D's hybrid search), oriented toward ``viewpoint``, along
    ``direction``, ``"none"``, or ``"tangent_plane"`` (consistent over the
    surface, as Open3D's). A point whose neighborhood is degenerate gets NaN.
    Returns the (N, 3) normals, or ``(normals, curvature)`` when ``curvature``."""
    pts = _points(points)
    out = np.empty_like(pts)
    curv = np.empty(len(pts), dtype=np.float32) if curvature else None
    _core.normals(pts, out, curv, k=k, radius=radius, orientation=orientation, viewpoint=list(viewpoint),
                  direction=list(direction), orient_k=orient_k, device=device)
    return (out, curv) if curvature else out


def _feature(fn, bins: int, points, normals_, k, radius, convention, device) -> np.ndarray:
    pts = _points(points)
    nrm = _normals_of(normals_, points, "normals")
    if nrm is None:
        raise ValueError("normals: give them, or a cloud that has them (ptreg.normals makes them)")
    out = np.empty((len(pts), bins), dtype=np.float32)
    fn(pts, nrm, out, k=k, radius=radius, convention=convention, device=device)
    return out


def fpfh(points: ArrayLike, normals: Optional[ArrayLike] = None, *, k: int = 30, radius: float = 0.0,
         convention: str = "pcl", device: str = "auto") -> np.ndarray:
    """Fast Point Feature Histograms, (N, 33) float32: each point's ``k`` nearest
    neighbors, within ``radius`` when > 0 (``k=0``: all within ``radius``, as
    PCL's setRadiusSearch; both: Open3D's hybrid search). ``convention``
    ``"pcl"`` (blocks sum to 100) or ``"open3d"`` (the point's own SPFH added).
    Rows of points without enough neighbors are NaN. ``normals``: given, or
    those of ``points`` when it is a cloud that has them."""
    return _feature(_core.fpfh, _core.FPFH_BINS, points, normals, k, radius, convention, device)


def pfh(points: ArrayLike, normals: Optional[ArrayLike] = None, *, k: int = 30, radius: float = 0.0,
        device: str = "auto") -> np.ndarray:
    """Point Feature Histograms, (N, 125) float32 (PCL's), neighborhoods as :func:`fpfh`."""
    return _feature(_core.pfh, _core.PFH_BINS, points, normals, k, radius, "pcl", device)


# ---- registration --------------------------------------------------------------

class ModelIndex:
    """A model's search structures (k-d tree and Delaunay graph), built once and
    reused by many :func:`icp` calls (pass it as the target), saved to and loaded
    from ``.pti`` files (``ptreg index`` writes the same)."""

    def __init__(self, points: Optional[ArrayLike] = None, *, delaunay: bool = True,
                 leaf_size: Optional[int] = None, _capsule=None):
        if _capsule is None:
            _capsule = _core.index_create(_points(points), delaunay=int(delaunay), leaf_size=leaf_size)
        self._capsule = _capsule

    @classmethod
    def load(cls, path: str) -> "ModelIndex":
        """Reads a ``.pti`` index (checked: a corrupted or foreign file raises FormatError)."""
        return cls(_capsule=_core.index_load(str(path)))

    def save(self, path: str) -> None:
        """Writes the index as a ``.pti`` file, atomically."""
        _core.index_save(self._capsule, str(path))

    @property
    def info(self) -> Result:
        """``points`` (the model), ``has_delaunay``, ``delaunay_edges``,
        ``delaunay_note`` (why there is no graph), ``duplicates`` and build times."""
        d = Result(_core.index_info(self._capsule))
        d["points"] = _rows(d["points"], np.float32, 3)
        return d

    @property
    def points(self) -> np.ndarray:
        return self.info.points

    def nearest(self, queries: ArrayLike) -> tuple:
        """Each query's nearest model point by the k-d tree: ``(indices,
        distances)``, uint32 model indexes (original order) and float32
        Euclidean distances."""
        q = _points(queries, "queries")
        nearest = np.empty(len(q), dtype=np.uint32)
        dist2 = np.empty(len(q), dtype=np.float32)
        _core.index_nearest(self._capsule, q, nearest, dist2)
        return nearest, np.sqrt(dist2)


def icp(source: ArrayLike, target: Union[ArrayLike, ModelIndex], *, method: str = "point",
        max_iter: int = 30, max_dist: Optional[float] = None, init: Optional[Matrix] = None,
        kernel: str = "none", kernel_scale: Optional[float] = None, lm: Optional[float] = None,
        source_normals: Optional[ArrayLike] = None, target_normals: Optional[ArrayLike] = None,
        normal_k: int = 10, normal_radius: Optional[float] = None, gicp_epsilon: Optional[float] = None,
        tol: Optional[float] = None, relative_fitness: Optional[float] = None,
        relative_rmse: Optional[float] = None, transformation_epsilon: Optional[float] = None,
        filter_sigma: Optional[float] = None, filter_start: Optional[int] = None, trim: Optional[float] = None,
        nn: str = "auto", device: str = "auto") -> Result:
    """Rigid ICP of ``source`` onto ``target`` (an (M, 3) array or a :class:`ModelIndex`).

    ``method``: ``"point"`` (Besl & McKay, Horn's closed form), ``"plane"``
    (point-to-plane), ``"symmetric"`` (Rusinkiewicz) or ``"gicp"`` (Generalized-ICP),
    the last three by Gauss-Newton in double (Levenberg-Marquardt from damping
    ``lm``). Normals: given, or estimated from ``normal_k`` neighbors (within
    ``normal_radius``). ``kernel``: ``"huber"``, ``"cauchy"``, ``"tukey"`` or ``"gm"``
    with ``kernel_scale``, as Open3D's. Stops: ``tol`` (the MSE's change; default
    1e-10 x the target's diagonal squared; 0: never), Open3D's ``relative_fitness``
    and ``relative_rmse``, PCL's ``transformation_epsilon``, ``max_iter``.

    Returns a :class:`Result`: ``transformation`` (4 x 4, takes source onto
    target), ``fitness``, ``rmse`` (as Open3D's), ``pairs``, ``iterations``,
    ``converged``, ``stop_reason``, ``mse`` per iteration, ``time_ms``, ``nn``,
    ``device``."""
    if kernel != "none" and kernel_scale is None:
        raise ValueError(f"kernel {kernel!r}: give kernel_scale, the residual where it starts to discount a pair")
    if (relative_fitness is None) != (relative_rmse is None):
        raise ValueError("relative_fitness and relative_rmse go together (Open3D stops when both hold)")
    options = dict(method=method, max_iter=max_iter, max_dist=max_dist, init=_matrix(init, "init"), kernel=kernel,
                   kernel_scale=kernel_scale, lm_lambda=lm, normal_k=normal_k, normal_radius=normal_radius,
                   gicp_epsilon=gicp_epsilon, tol=tol, relative_fitness=relative_fitness,
                   relative_rmse=relative_rmse, transformation_epsilon=transformation_epsilon,
                   filter_sigma=filter_sigma, filter_start=filter_start, trim=trim, nn=nn, device=device)
    src = _points(source, "source")
    # the clouds' own normals where the method reads them (icp.h: the target's for
    # plane, gicp and symmetric, the source's for gicp and symmetric)
    sn = _normals_of(source_normals, source, "source_normals", method in ("gicp", "symmetric"))
    tn = _normals_of(target_normals, target, "target_normals", method in ("plane", "gicp", "symmetric"))
    tgt = target._capsule if isinstance(target, ModelIndex) else _points(target, "target")
    d = _core.icp(src, tgt, sn, tn, **options)
    r = _with_transform(d, "transformation")
    return _keep_for_report(r, "ptreg icp", src, target if isinstance(target, ModelIndex) else tgt, init, "mse")


def register(source: ArrayLike, target: ArrayLike, *, voxel: float = 0.0, method: str = "ransac",
             refine: Optional[str] = "plane", source_normals: Optional[ArrayLike] = None,
             target_normals: Optional[ArrayLike] = None, mutual: bool = True, max_dist: Optional[float] = None,
             refine_dist: Optional[float] = None, refine_iter: Optional[int] = None,
             ransac_max_iter: Optional[int] = None, confidence: Optional[float] = None,
             edge_length: Optional[float] = None, check_distance: Optional[float] = None,
             normal_angle: Optional[float] = None, seed: Optional[int] = None) -> Result:
    """Global registration without an initial guess, as Open3D's pipeline:
    voxel-grid downsampling (``voxel``; 0: the target's diagonal / 80), normals,
    FPFH, mutual feature matches, then RANSAC (Open3D's checkers) or FGR
    (``method="fgr"``), then local refinement (``refine``: ``"plane"``, ``"gicp"``,
    ``"symmetric"``, ``"point"``, or None) on all points.

    Returns a :class:`Result`: ``transformation``, ``global_transformation`` (before
    refinement), ``fitness``, ``rmse``, ``voxel``, ``matches``, ``inliers`` and each
    stage's time (``downsample_ms`` ... ``time_ms``)."""
    src, tgt = _points(source, "source"), _points(target, "target")
    d = _core.register(src, tgt, _normals_of(source_normals, source, "source_normals"),
                       _normals_of(target_normals, target, "target_normals"),
                       voxel=voxel, method=method, refine=refine or "plane", no_refine=int(refine is None),
                       mutual=int(mutual), max_dist=max_dist, refine_dist=refine_dist, refine_iter=refine_iter,
                       ransac_max_iter=ransac_max_iter, confidence=confidence, edge_length=edge_length,
                       check_distance=check_distance, normal_angle=normal_angle, seed=seed)
    r = _with_transform(d, "transformation", "global_transformation")
    return _keep_for_report(r, "ptreg register", src, tgt, None, None)


def emicp(source: ArrayLike, target: ArrayLike, *, sigma2_init: Optional[float] = None,
          sigma2_final: Optional[float] = None, sigma_factor: Optional[float] = None, d02: Optional[float] = None,
          max_iter: Optional[int] = None, tol: Optional[float] = None, init: Optional[Matrix] = None,
          precision: str = "fp32", device: str = "auto", tune: bool = True) -> Result:
    """EM-ICP (Granger & Pennec; Tamaki et al.): every source point softly paired
    with every target point by Gaussian weights, sigma^2 annealed from
    ``sigma2_init`` down to ``sigma2_final`` by ``sigma_factor`` per iteration (the
    defaults scale with the clouds), in ``precision`` ``"fp32"``, ``"fp16"`` or
    ``"fp64"``, on ``device``. With ``tune`` the engine runs the variant ``ptreg
    tune`` found fastest on this machine for this problem size (its cache), else
    the built-in one. Returns ``transformation``, ``fitness``, ``rmse``,
    ``iterations``, ``stop_reason``, ``gpts`` (10^9 pair terms per second),
    ``variant`` (``source`` ``"tuned"`` or ``"default"``, the cache's
    ``size_class``, and each engine knob) ..."""
    src, tgt = _points(source, "source"), _points(target, "target")
    d = _core.emicp(src, tgt, bool(tune), sigma2_init=sigma2_init,
                    sigma2_final=sigma2_final, sigma_factor=sigma_factor, d02=d02, max_iter=max_iter, tol=tol,
                    init=_matrix(init, "init"), precision=precision, device=device)
    return _keep_for_report(_with_transform(d, "transformation"), "ptreg emicp", src, tgt, init, None)


def _concatenated(clouds: Sequence[ArrayLike], name: str) -> tuple:
    """(all points as one (N, 3) float32 array, offsets: count + 1 uint64)."""
    parts = [_points(c, f"{name}[{i}]") for i, c in enumerate(clouds)]
    offsets = np.zeros(len(parts) + 1, dtype=np.uint64)
    np.cumsum([len(c) for c in parts], out=offsets[1:])
    points = np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.float32)
    return np.ascontiguousarray(points, dtype=np.float32), offsets


def batch(sources: Sequence[ArrayLike], target: Optional[ArrayLike] = None, *,
          targets: Optional[Sequence[ArrayLike]] = None, translation: bool = True,
          sigma2_init: Optional[float] = None, sigma2_final: Optional[float] = None,
          sigma_factor: Optional[float] = None, d02: Optional[float] = None, max_iter: Optional[int] = None,
          tol: Optional[float] = None, device: str = "auto") -> Result:
    """Many small EM-ICP registrations at once (the atom-probe case: millions of
    neighborhoods onto a reference motif): each of ``sources`` ((n_i, 3) arrays)
    onto the one ``target``, or onto its own of ``targets``. ``translation=False``
    fits rotations only (about the origin, where both are centred). The same bits
    for any thread count.

    Returns a :class:`Result`: ``transformations`` (count, 4, 4), ``iterations``,
    ``stop_reasons`` (names), ``time_ms``, ``pairs_per_s``, ``gpts``, ``isa``."""
    if (target is None) == (targets is None):
        raise ValueError("batch: give either one shared target or per-pair targets")
    src, src_off = _concatenated(sources, "sources")
    if target is not None:
        tgt, tgt_off = _points(target, "target"), None
    else:
        if len(targets) != len(sources):
            raise ValueError(f"batch: {len(sources)} sources against {len(targets)} targets")
        tgt, tgt_off = _concatenated(targets, "targets")
    count = len(sources)
    transforms = np.empty((count, 16), dtype=np.float64)
    iterations = np.empty(count, dtype=np.int32)
    stops = np.empty(count, dtype=np.int32)
    stats = _core.batch(src, src_off, tgt, tgt_off, transforms, iterations, stops, translation=int(translation),
                        sigma2_init=sigma2_init, sigma2_final=sigma2_final, sigma_factor=sigma_factor, d02=d02,
                        max_iter=max_iter, tol=tol, device=device)
    r = Result(stats)
    r["transformations"] = transforms.reshape(count, 4, 4)
    r["iterations"] = iterations
    r["stop_reasons"] = [_core.stop_reason_name(int(s)) for s in stops]
    return r


# ---- volumes ---------------------------------------------------------------------

def harris3d(volume: Union[Volume, np.ndarray], *, window: int = 5, sigma: float = 0.0, k: float = 0.01,
             threshold: float = 0.01, threshold_mode: str = "relative", min_distance: float = 0.0, top: int = 0,
             border: str = "skip", scores: bool = False, device: str = "auto", tune: bool = True) -> Result:
    """3-D Harris interest points of a volume (a :class:`Volume` or an array
    indexed ``[z, y, x]``): score det(M) - k tr(M)^3 of the Gaussian-weighted
    gradient tensor over a ``window``^3 neighborhood; keypoints above
    ``threshold`` (relative to the largest score, or absolute), local maxima of
    their 26 neighbors, ``min_distance`` apart, the best ``top`` (0: all).

    With ``tune`` the tiling (or a device's method) is the one ``ptreg tune
    --kernel harris`` found fastest here; the scores' bits are the same either way.

    Returns a :class:`Result`: ``keypoints`` (a structured array of x, y, z,
    score, best first), ``max_score``, ``threshold`` (absolute), ``time_ms``,
    ``variant`` (as :func:`emicp`'s), and with ``scores=True`` the score volume
    ``[z, y, x]``."""
    arr, spacing, origin = _volume_array(volume)
    nz, ny, nx = arr.shape
    d = Result(_core.harris3d(arr, (nx, ny, nz), _voxel_type(arr), list(spacing), list(origin), bool(scores),
                              bool(tune), window=window, sigma=sigma, k=k, threshold=threshold,
                              threshold_mode=threshold_mode, min_distance=min_distance, top=top, border=border,
                              device=device))
    d["keypoints"] = np.frombuffer(d["keypoints"], dtype=KEYPOINT_DTYPE)
    if scores:
        d["scores"] = np.frombuffer(d["scores"], dtype=np.float32).reshape(nz, ny, nx)
    return d


# ---- LDDMM ---------------------------------------------------------------------

_LDDMM_FLOW = ("sigma", "time_points", "integrator", "device")


class LDDMMResult(Result):
    """:func:`lddmm`'s result: ``p0`` (the initial momenta), ``q1`` (the template
    shot to t = 1), ``objective``, ``iterations``, ``stop_reason``, distances before
    and after; :meth:`warp` moves any points by the same flow."""

    def warp(self, points: ArrayLike) -> np.ndarray:
        """``points`` (M, 3) moved by the diffeomorphism found (float64)."""
        return warp(self["q0"], self["p0"], points, **{k: self["options"][k] for k in _LDDMM_FLOW})


def lddmm(template: ArrayLike, target: ArrayLike, *, sigma: float = 1.0, time_points: int = 20,
          lam: float = 1000.0, gamma: float = 1.0, max_iter: int = 400, gtol: Optional[float] = None,
          ftol: Optional[float] = None, integrator: str = "euler", precision: str = "fp32",
          init: str = "scaled", device: str = "auto") -> LDDMMResult:
    """LDDMM landmark matching by geodesic shooting (Gaussian kernel of width
    ``sigma``, ``time_points`` steps, ``lam`` the data term's weight, ``gamma`` the
    energy's), optimised by L-BFGS, in O(n) memory. ``template`` and ``target``:
    (n, 3) landmarks in correspondence."""
    q0 = _points64(template, "template")
    options = dict(sigma=sigma, time_points=time_points, lam=lam, gamma=gamma, max_iter=max_iter, gtol=gtol,
                   ftol=ftol, integrator=integrator, precision=precision, init=init, device=device)
    library = {("lambda" if k == "lam" else k): v for k, v in options.items()}  # the library's names
    d = LDDMMResult(_core.lddmm_register(q0, _points64(target, "target"), **library))
    d["p0"] = _rows(d["p0"], np.float64, 3)
    d["q1"] = _rows(d["q1"], np.float64, 3)
    d["q0"] = q0
    d["options"] = options
    return d


def warp(q0: ArrayLike, p0: ArrayLike, points: ArrayLike, *, sigma: float = 1.0, time_points: int = 20,
         integrator: str = "euler", device: str = "auto") -> np.ndarray:
    """``points`` moved by the flow shot from landmarks ``q0`` with momenta ``p0``
    (with the ``sigma``, ``time_points`` and ``integrator`` of the registration)."""
    x = _points64(points, "points")
    out = np.empty_like(x)
    _core.lddmm_warp(_points64(q0, "q0"), _points64(p0, "p0"), x, out, sigma=sigma, time_points=time_points,
                     integrator=integrator, device=device)
    return out


# ---- the autotuner ---------------------------------------------------------------

_TUNE_SIZES = {"pair": 20000, "harris": 256, "fpfh": 50000}


def tune(kernel: str = "pair", size: Optional[int] = None, *, precision: str = "fp32", method: str = "auto",
         sample_fraction: Optional[float] = None, reps: Optional[int] = None, budget_s: Optional[float] = None,
         confirm: Optional[int] = None, min_gain: Optional[float] = None, seed: Optional[int] = None) -> Result:
    """Searches a CPU kernel's variants on this machine, as ``ptreg tune`` does:
    ``"pair"`` (EM-ICP's pair engine: threads, column tile, row block, row
    vectors, loop order; ``size`` points a side, default 20000), ``"harris"``
    (threads and rows per tile; a ``size``^3 volume, default 256) or ``"fpfh"``
    (threads; ``size`` points, default 50000). Every candidate must reproduce the
    default's output; the winner must beat the default by ``min_gain`` in a final
    confirmation. Nothing is cached here (``ptreg tune`` writes the cache that
    later runs use, ``emicp`` among them). Returns ``winner`` (parameter ->
    value), ``winner_seconds``, ``default_seconds``, ``gain``, ``default_kept``,
    ``candidates``, ``method``, ``machine`` and ``elapsed_s``."""
    if kernel not in _TUNE_SIZES:
        raise ValueError(f"tune: kernel {kernel!r} is not pair, harris or fpfh")
    if precision not in ("fp32", "fp16"):
        raise ValueError(f"tune: precision {precision!r} is not fp32 or fp16")
    return Result(_core.tune(kernel, int(size or _TUNE_SIZES[kernel]), precision == "fp16", method=method,
                             sample_fraction=sample_fraction, reps=reps, budget_s=budget_s, confirm=confirm,
                             min_gain=min_gain, seed=seed))


# ---- many scans ------------------------------------------------------------------

def multiway(scans: Sequence[ArrayLike], *, normals: Optional[Sequence[Optional[ArrayLike]]] = None,
             pairs: Optional[ArrayLike] = None, voxel: Optional[float] = None, pair_neighbors: Optional[int] = None,
             method: str = "ransac", refine: str = "plane", refine_dist: Optional[float] = None,
             refine_iter: Optional[int] = None, min_fitness: Optional[float] = None, anchor: int = 0,
             joint_refine: Optional[int] = None, edge_prune_threshold: Optional[float] = None,
             preference_loop_closure: Optional[float] = None, seed: Optional[int] = None) -> Result:
    """Many overlapping scans of one object into the frame of ``scans[anchor]``
    (``ptreg multiway``): each scan's features once, candidate pairs (every pair;
    ``pair_neighbors`` K: each scan's K most similar and its successor; or
    ``pairs``, (P, 2) scan numbers, scan i onto scan j) registered by RANSAC
    (``method="fgr"``: FGR) and ICP (``refine``), the best pairs' spanning tree
    placing the scans, the pose graph solved with a line process over the other
    pairs, then the joint refinement.

    Returns a :class:`Result`: ``poses`` (count, 4, 4), each scan into the
    anchor's frame; ``placed`` (False: no kept pair reaches the scan, its pose
    is the identity); ``edges`` (a dict per candidate pair: ``source``,
    ``target``, ``transformation``, ``fitness``, ``rmse``, ``uncertain``,
    ``kept``, ``confidence``); ``voxel``; each stage's time."""
    pts = [_points(c, f"scans[{i}]") for i, c in enumerate(scans)]
    nrm = [None] * len(pts) if normals is None else [_optional_points(n, f"normals[{i}]")
                                                     for i, n in enumerate(normals)]
    pr = None if pairs is None else np.ascontiguousarray(pairs, dtype=np.uint64).reshape(-1, 2)
    d = _core.multiway(pts, nrm, pr, voxel=voxel, pair_neighbors=pair_neighbors, method=method, refine=refine,
                       refine_dist=refine_dist, refine_iter=refine_iter, min_fitness=min_fitness, anchor=anchor,
                       joint_refine=joint_refine, edge_prune_threshold=edge_prune_threshold,
                       preference_loop_closure=preference_loop_closure, seed=seed)
    r = Result(d)
    r["poses"] = np.array(d["poses"], dtype=np.float64).reshape(-1, 4, 4)
    for e in r["edges"]:
        e["transformation"] = np.array(e["transformation"], dtype=np.float64).reshape(4, 4)
    return r


def track(model: ArrayLike, frames: Iterable, *, model_normals: Optional[ArrayLike] = None,
          rate: float = 10.0, predict: str = "constant-velocity", init: Optional[Matrix] = None,
          method: str = "plane", nn: str = "auto", max_iter: Optional[int] = None, max_dist: Optional[float] = None,
          tol: Optional[float] = None, min_fitness: Optional[float] = None, max_rmse: Optional[float] = None,
          max_speed: Optional[float] = None, max_turn_deg: Optional[float] = None, recover: bool = True,
          device: str = "auto") -> Iterator[Result]:
    """Every frame of a sensor registered against one model, in order, as it
    arrives (``ptreg track``): yields a :class:`Result` per frame as soon as its
    pose is known. ``frames``: (N, 3) arrays, or (time in seconds, array) pairs
    (else frame k is taken at k / ``rate``). Each frame starts from a
    prediction (``predict``: ``"constant-velocity"`` or ``"none"``), is
    registered by ICP against the model (built, and uploaded to ``device``,
    once), and checked: ``min_fitness``, ``max_rmse``, ``max_speed`` (model units
    per second) and ``max_turn_deg`` (per second); a frame that fails is
    recovered by global registration against the model (``recover``).

    Each Result: ``transformation`` (4 x 4, takes the frame into the model's
    frame), ``predicted``, ``state`` (``"tracked"``, ``"recovered"`` or
    ``"lost"``), ``iterations``, ``fitness``, ``rmse``, ``latency_ms``, ``time``."""
    if rate <= 0:
        raise ValueError(f"track: rate {rate} must be positive")
    tracker = _core.tracker_create(_points(model, "model"), _optional_points(model_normals, "model_normals"),
                                   predict=predict, init=_matrix(init, "init"), method=method, nn=nn,
                                   max_iter=max_iter, max_dist=max_dist, tol=tol, min_fitness=min_fitness,
                                   max_rmse=max_rmse, max_speed=max_speed, max_turn_deg=max_turn_deg,
                                   recover=int(recover), device=device)
    for k, item in enumerate(frames):
        if isinstance(item, tuple) and len(item) == 2:
            when, frame = float(item[0]), item[1]
        else:
            when, frame = k / rate, item
        d = _core.tracker_push(tracker, _points(frame, f"frames[{k}]"), when)
        r = _with_transform(d, "transformation", "predicted")
        r["time"] = when
        yield r
