"""Embedding texts with a saved model: eval sets' vectors, the ``embed`` command, corpus embeddings
(sharded, resumable), the ONNX backend, the texts reader and the process's memory."""
