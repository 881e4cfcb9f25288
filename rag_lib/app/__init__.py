"""The course's RAG app: the Gradio UI, its router graph and the helpers only the app uses (the core works without)."""
