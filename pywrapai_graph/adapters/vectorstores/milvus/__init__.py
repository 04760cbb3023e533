"""MilvusVectorStore: Milvus by URL, or milvus-lite in a local file."""
