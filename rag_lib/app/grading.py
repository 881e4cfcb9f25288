"""An LLM grade of one answer: faithfulness, relevance and completeness, each from 1 to 5, in one structured call."""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, Field

from rag_lib.prompts import PASSAGE_RULE, fit_prompt, passage_block
from rag_lib.structured import structured_output

GRADE_PROMPT = (
    "Grade the answer from 1 (poor) to 5 (excellent).\n"
    "faithfulness: every statement is supported by the passages\n"
    "relevance: the answer addresses the question\n"
    "completeness: the answer gives everything the question asks for\n"
    + PASSAGE_RULE
    + "\n\nPassages:\n{passages}\n\nQuestion: {question}\nAnswer: {answer}"
)

PASSAGE_CHARS = 300  # passages shown to the grader are cut here (prompt processing is the cost on CPU)


class AnswerGrade(BaseModel):
    """LLM grades of one answer, 1 (poor) to 5 (excellent)."""

    faithfulness: int = Field(ge=1, le=5, description="supported by the passages")
    relevance: int = Field(ge=1, le=5, description="addresses the question")
    completeness: int = Field(ge=1, le=5, description="gives everything the question asks for")


def grade_answer(llm: BaseChatModel, question: str, documents: list[Document], answer: str) -> AnswerGrade:
    """One structured LLM call grading faithfulness, relevance and completeness from 1 to 5 (StructuredOutputError
    when the reply is unusable)."""

    def prompt(question: str, documents: list[Document]) -> list:
        passages = "\n".join(passage_block(i, d.page_content[:PASSAGE_CHARS]) for i, d in enumerate(documents, 1))
        return [HumanMessage(GRADE_PROMPT.format(passages=passages, question=question, answer=answer))]

    return structured_output(llm, AnswerGrade).invoke(prompt(*fit_prompt(llm, prompt, question, documents)))
