"""The gRPC server: ``Inference.Embed``, ``Answer`` and ``Describe`` plus the standard
health service."""

from __future__ import annotations

import concurrent.futures
from typing import Any, NoReturn

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from grove_ask.answer import Evidence, Extractive, Generator, NotebookRef
from grove_ask.batcher import Batcher
from grove_ask.cancel import Cancellation, Cancelled
from grove_ask.chat import OpenAIChat
from grove_ask.providers import ProviderError
from grove_ask.settings import AskSettings
from grove_ask.telemetry import ServerTelemetry
from grove_contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from grove_contracts.notebooks import MAX_NAME_CHARS
from grove_contracts.proposals import MAX_PROPOSAL_NOTEBOOKS

MAX_TEXTS = 256
MAX_TEXT_CHARS = 6000
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
MAX_QUESTION_CHARS = 6000
MAX_PREVIOUS_QUESTIONS = 8
MAX_EVIDENCE = 24
MAX_EVIDENCE_CHARS = 6000
SERVICE_NAME = "grove.inference.v1.Inference"


def abort(context: grpc.ServicerContext, code: grpc.StatusCode, details: str) -> NoReturn:
    """End the call with ``code`` (``context.abort`` raises; this says so to the reader)."""
    context.abort(code, details)
    raise AssertionError("context.abort returned")


class InferenceService(inference_pb2_grpc.InferenceServicer):
    """Embeds texts with the one configured profile; answers with the configured generator."""

    def __init__(
        self,
        batcher: Batcher | None,
        profile: str,
        generator: Generator | None = None,
        configuration: str = "extractive",
    ) -> None:
        self._batcher = batcher
        self._profile = profile
        self._generator = generator
        #: What ``Describe`` and every answer report (``configuration_of``).
        self._configuration = configuration if generator is not None else "disabled"

    def Embed(self, request: Any, context: grpc.ServicerContext) -> Any:  # gRPC method name
        problem = _invalid(request)
        if problem:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        batcher = self._batcher
        if batcher is None:
            abort(context, grpc.StatusCode.FAILED_PRECONDITION, "disabled: embeddings are disabled")
        if request.profile and request.profile != self._profile:
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"unknown_profile: this server embeds with {self._profile!r}",
            )
        remaining = context.time_remaining()
        try:
            vectors = batcher.embed(list(request.texts), timeout=remaining)
        except concurrent.futures.TimeoutError:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "timeout: embedding took too long")
        except ProviderError as ex:
            code = (
                grpc.StatusCode.FAILED_PRECONDITION
                if ex.reason == "dimension_mismatch"
                else grpc.StatusCode.UNAVAILABLE
            )
            context.abort(code, str(ex))
        dimensions = batcher.provider.dimensions
        return inference_pb2.EmbedResponse(
            profile=self._profile,
            dimensions=dimensions,
            vectors=[inference_pb2.Vector(values=v) for v in vectors],
        )

    def Answer(self, request: Any, context: grpc.ServicerContext) -> Any:  # gRPC method name
        problem = _invalid_answer(request)
        if problem:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        generator = self._generator
        if generator is None:
            abort(context, grpc.StatusCode.FAILED_PRECONDITION, "disabled: answering is disabled")
        evidence = [Evidence(e.note_id, e.version, e.content) for e in request.evidence]
        notebooks = [NotebookRef(n.id, n.name) for n in request.notebooks]
        markdown = request.format == inference_pb2.MARKDOWN
        # gRPC runs the callback when the call ends: cancelled, past its deadline or done;
        # it shuts a provider request still in flight.
        cancellation = Cancellation()
        if not context.add_callback(cancellation.cancel):
            cancellation.cancel()  # the call has already ended
        try:
            answer = generator.answer(
                request.question,
                list(request.previous_questions),
                evidence,
                markdown,
                context.time_remaining(),
                cancellation,
                notebooks,
            )
        except concurrent.futures.TimeoutError:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "timeout: answering took too long")
        except Cancelled:
            context.abort(grpc.StatusCode.CANCELLED, "cancelled: the call ended")
        except ProviderError as ex:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(ex))
        return inference_pb2.AnswerResponse(
            text=answer.text,
            format=inference_pb2.MARKDOWN if markdown else inference_pb2.PLAIN,
            generator=answer.generator,
            citations=[
                inference_pb2.Citation(
                    note_id=c.note_id, version=c.version, quote=c.quote, start=c.start, end=c.end
                )
                for c in answer.citations
            ],
            proposals=[
                inference_pb2.ProposalDraft(
                    summary=p.summary, change_json=p.change.model_dump_json()
                )
                for p in answer.proposals
            ],
            proposals_dropped=answer.proposals_dropped,
            configuration=self._configuration,
        )

    def Describe(self, request: Any, context: grpc.ServicerContext) -> Any:  # gRPC method name
        return inference_pb2.DescribeResponse(configuration=self._configuration)


def _invalid_answer(request: Any) -> str | None:
    """What is wrong with an ``AnswerRequest`` (limits in the .proto), or None."""
    if not request.question.strip():
        return "question: must not be empty"
    if len(request.question) > MAX_QUESTION_CHARS:
        return f"question: at most {MAX_QUESTION_CHARS} characters"
    if len(request.previous_questions) > MAX_PREVIOUS_QUESTIONS:
        return f"previous_questions: at most {MAX_PREVIOUS_QUESTIONS}"
    for index, text in enumerate(request.previous_questions):
        if len(text) > MAX_QUESTION_CHARS:
            return f"previous_questions[{index}]: at most {MAX_QUESTION_CHARS} characters"
    if len(request.evidence) > MAX_EVIDENCE:
        return f"evidence: at most {MAX_EVIDENCE} items"
    for index, item in enumerate(request.evidence):
        problem = _invalid_evidence(item)
        if problem:
            return f"evidence[{index}].{problem}"
    if len(request.notebooks) > MAX_PROPOSAL_NOTEBOOKS:
        return f"notebooks: at most {MAX_PROPOSAL_NOTEBOOKS}"
    for index, notebook in enumerate(request.notebooks):
        problem = _invalid_notebook(notebook)
        if problem:
            return f"notebooks[{index}].{problem}"
    return None


def _invalid_notebook(item: Any) -> str | None:
    if not item.id:
        return "id: required"
    if not item.name.strip() or len(item.name) > MAX_NAME_CHARS:
        return f"name: 1-{MAX_NAME_CHARS} characters, not blank"
    return None


def _invalid_evidence(item: Any) -> str | None:
    if not item.note_id:
        return "note_id: required"
    if item.version < 1:
        return "version: at least 1"
    if not item.content.strip():
        return "content: must not be empty"
    if len(item.content) > MAX_EVIDENCE_CHARS:
        return f"content: at most {MAX_EVIDENCE_CHARS} characters"
    return None


def _invalid(request: Any) -> str | None:
    if not request.texts:
        return "texts: give at least one text"
    if len(request.texts) > MAX_TEXTS:
        return f"texts: at most {MAX_TEXTS} per call"
    for index, text in enumerate(request.texts):
        if not text.strip():
            return f"texts[{index}]: must not be empty"
        if len(text) > MAX_TEXT_CHARS:
            return f"texts[{index}]: at most {MAX_TEXT_CHARS} characters"
    if request.purpose == inference_pb2.PURPOSE_UNSPECIFIED:
        return "purpose: DOCUMENT or QUERY"
    return None


def create_server(
    settings: AskSettings, address: str, batcher: Batcher | None
) -> tuple[grpc.Server, int]:
    """Build (not start) the server bound to ``address``; returns it and its port."""
    server = grpc.server(
        concurrent.futures.ThreadPoolExecutor(max_workers=settings.ask_threads),
        interceptors=[ServerTelemetry()],
        maximum_concurrent_rpcs=settings.ask_max_concurrent_rpcs,
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    inference_pb2_grpc.add_InferenceServicer_to_server(  # type: ignore[no-untyped-call]
        InferenceService(
            batcher,
            settings.embedding_profile,
            _generator(settings, batcher),
            configuration_of(settings),
        ),
        server,
    )
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    port = server.add_insecure_port(address)
    return server, port


def configuration_of(settings: AskSettings) -> str:
    """The answer generator and the settings that change what it writes: ``disabled``,
    ``extractive`` or ``openai:<model>`` (a new model is a new configuration)."""
    if settings.answer_generator == "openai":
        return f"openai:{settings.answer_openai_model}"
    return settings.answer_generator


def _generator(settings: AskSettings, batcher: Batcher | None) -> Generator | None:
    """The configured answer generator; extractive uses MiniLM similarity only with MiniLM."""
    if settings.answer_generator == "disabled":
        return None
    extractive = Extractive(batcher if settings.embedding_profile == "minilm" else None)
    if settings.answer_generator == "openai":
        return OpenAIChat(settings, extractive)
    return extractive
