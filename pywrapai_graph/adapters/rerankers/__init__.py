"""Rerank adapters: hosted rerank APIs (Cohere) and a local ONNX cross-encoder."""
