"""`python -m rag_lib.app`: start the Gradio app."""

from rag_lib.app.ui import main

main()
