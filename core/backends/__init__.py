"""Model and server backends: embeddings, NLI cross-encoder, OpenAI-compatible LLM."""
