#!/usr/bin/python3
"""Remakes the pose-graph goldens of tests/test_posegraph.c with Open3D
(Debian's python3-open3d, 0.16.1 when they were made):

    /usr/bin/python3 tests/data/posegraph/make_posegraph_golden.py

- o3d_small.json: a 3-node graph written by o3d.io.write_pose_graph (the
  layout the reader must take: column-major matrices, jsoncpp's key order).
- o3d_ring_in.json, o3d_ring_out.json: a ring of 8 poses with noisy odometry,
  two right loop closures and one wrong one (uncertain), before and after
  o3d.pipelines.registration.global_optimization (Levenberg-Marquardt, the
  default convergence criteria, the options in OPTIONS below).
- info_source.xyz, info_target.xyz, info_golden.txt: two small clouds and
  get_information_matrix_from_point_clouds(source, target, MAX_DIST, T) (T
  on the golden's first line, row-major; the matrix on the next six).
"""
import os

import numpy as np
import open3d as o3d

reg = o3d.pipelines.registration
here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261129)
OPTIONS = dict(max_correspondence_distance=0.075, edge_prune_threshold=0.25, preference_loop_closure=1.0,
               reference_node=0)


def rot(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def rigid(axis, angle, t):
    T = np.eye(4)
    T[:3, :3] = rot(axis, angle)
    T[:3, 3] = t
    return T


def information(points):
    I = np.zeros((6, 6))
    for x, y, z in points:
        G = np.array([[0, z, -y, 1, 0, 0], [-z, 0, x, 0, 1, 0], [y, -x, 0, 0, 0, 1]])
        I += G.T @ G
    return I


def small():
    pg = reg.PoseGraph()
    for i in range(3):
        pg.nodes.append(reg.PoseGraphNode(rigid([1, 2, 3], 0.1 * i, [0.5 * i, -0.25 * i, 0.125])))
    pg.edges.append(reg.PoseGraphEdge(0, 1, rigid([0, 0, 1], 0.3, [1, 2, 3]), information(rng.random((20, 3))),
                                      uncertain=False))
    pg.edges.append(reg.PoseGraphEdge(1, 2, rigid([1, 0, 0], -0.2, [0.1, 0, -4]), information(rng.random((30, 3))),
                                      uncertain=False))
    pg.edges.append(reg.PoseGraphEdge(2, 0, rigid([0, 1, 1], 0.7, [3, 2, 1]), information(rng.random((40, 3))),
                                      uncertain=True, confidence=0.75))
    o3d.io.write_pose_graph(os.path.join(here, "o3d_small.json"), pg)


def ring():
    n = 8
    truth = [rigid([0, 0, 1], 2 * np.pi * i / n, [np.cos(2 * np.pi * i / n), np.sin(2 * np.pi * i / n), 0.1 * i])
             for i in range(n)]
    info = information(rng.random((50, 3)) - 0.5)
    pg = reg.PoseGraph()
    odometry = np.eye(4)
    pg.nodes.append(reg.PoseGraphNode(truth[0]))
    for i in range(n - 1):
        rel = np.linalg.inv(truth[i + 1]) @ truth[i]  # takes i into i+1's frame
        noisy = rigid(rng.normal(size=3), rng.normal(scale=0.02), rng.normal(scale=0.02, size=3)) @ rel
        pg.edges.append(reg.PoseGraphEdge(i, i + 1, noisy, info, uncertain=False))
        odometry = odometry @ np.linalg.inv(noisy)
        pg.nodes.append(reg.PoseGraphNode(truth[0] @ odometry))
    for s, t in [(n - 1, 0), (5, 1)]:
        rel = np.linalg.inv(truth[t]) @ truth[s]
        pg.edges.append(reg.PoseGraphEdge(s, t, rel, info, uncertain=True, confidence=1.0))
    pg.edges.append(reg.PoseGraphEdge(6, 2, rigid([1, 1, 0], 1.0, [2, -1, 0.5]), info, uncertain=True,
                                      confidence=1.0))
    o3d.io.write_pose_graph(os.path.join(here, "o3d_ring_in.json"), pg)
    reg.global_optimization(pg, reg.GlobalOptimizationLevenbergMarquardt(),
                            reg.GlobalOptimizationConvergenceCriteria(), reg.GlobalOptimizationOption(**OPTIONS))
    o3d.io.write_pose_graph(os.path.join(here, "o3d_ring_out.json"), pg)


def info():
    src = rng.random((300, 3)).astype(np.float32)
    T = rigid([0.2, 1, 0.3], 0.05, [0.01, -0.02, 0.015])
    tgt = ((src.astype(np.float64) @ T[:3, :3].T + T[:3, 3]) + rng.normal(scale=0.03, size=(300, 3)))
    tgt = tgt.astype(np.float32)
    np.savetxt(os.path.join(here, "info_source.xyz"), src, fmt="%.9g")
    np.savetxt(os.path.join(here, "info_target.xyz"), tgt, fmt="%.9g")
    a = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(np.loadtxt(os.path.join(here, "info_source.xyz"))))
    b = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(np.loadtxt(os.path.join(here, "info_target.xyz"))))
    max_dist = 0.05
    I = reg.get_information_matrix_from_point_clouds(a, b, max_dist, T)
    with open(os.path.join(here, "info_golden.txt"), "w") as f:
        f.write("# max_dist %.17g; T (row-major), then the 6x6 information matrix (Open3D %s)\n"
                % (max_dist, o3d.__version__))
        f.write(" ".join("%.17g" % v for v in T.ravel()) + "\n")
        for row in I:
            f.write(" ".join("%.17g" % v for v in row) + "\n")


small()
ring()
info()
