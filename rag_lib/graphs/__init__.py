"""LangGraph graphs of the course: plain RAG, Corrective RAG, RAG with an LLM judge, the app router."""
