"""REST views for taking a memory bank out and bringing one in (docs/export-import.md): thin — parse,
call the export selector / the import service, render. Both need the ``admin`` scope. The import takes
the file either wrapped in JSON (``text``, options beside it) or as the body itself
(``application/x-ndjson``, options in the query string), so an export goes back in with
``curl --data-binary @bank.jsonl``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.negotiation import BaseContentNegotiation, DefaultContentNegotiation
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_ADMIN
from accounts.services import write_admit
from memories.transfer.export_format import MEDIA_TYPE, VERSION
from memories.transfer.selectors import export_lines, export_scope
from memories.transfer.services import FORMATS, ImportInvalid, bank_export_record, bank_import
from reasoningbank.api_errors import error_body, error_responses
from reasoningbank.serializers import StrictBooleanField, StrictCharField, StrictQuerySerializer, StrictSerializer

TAGS = ["export and import"]
LINES_PER_CHUNK = 200


class JSONErrorsOnly(BaseContentNegotiation):
    """The export answers JSON Lines whatever the client accepts, and its errors JSON: no 406 for an
    ``Accept: application/x-ndjson`` client, and no ``?format=`` parameter."""

    def select_parser(self, request: Request, parsers: Any) -> Any:
        return parsers[0] if parsers else None

    def select_renderer(self, request: Request, renderers: Any, format_suffix: str | None = None) -> Any:
        return renderers[0], renderers[0].media_type


class FormatIsAnOption(DefaultContentNegotiation):
    """The import's ``format`` names its file's format: DRF would read ``?format=`` as the renderer to
    answer in (and, before authenticating, 404 a name it has no renderer for). The import answers JSON."""

    def select_renderer(self, request: Request, renderers: Any, format_suffix: str | None = None) -> Any:
        return renderers[0], renderers[0].media_type


def _chunk(lines: Iterator[str]) -> bytes:
    out = []
    for line in lines:
        out.append(line)
        if len(out) >= LINES_PER_CHUNK:
            break
    return "".join(out).encode()


def _sync_chunks(lines: Iterator[str]) -> Iterator[bytes]:
    while chunk := _chunk(lines):
        yield chunk


async def _async_chunks(lines: Iterator[str]) -> AsyncIterator[bytes]:
    """Under ASGI a synchronous iterator would be read whole before the first byte is sent; this
    reads it a chunk at a time on the request's one database thread (thread-sensitive), which keeps
    the export's transaction."""
    take = sync_to_async(_chunk, thread_sensitive=True)
    try:
        while chunk := await take(lines):
            yield chunk
    finally:
        close = getattr(lines, "close", None)
        if close is not None:
            await sync_to_async(close, thread_sensitive=True)()


class ExportQuerySerializer(StrictQuerySerializer):
    project = serializers.SlugField(required=False, help_text="a project's slug: export only its memories")
    embeddings = serializers.BooleanField(
        required=False,
        default=False,
        help_text="also write each memory's embedding (an import by the same embedder keeps it instead of "
        "embedding again)",
    )


class ExportView(OrgAPIView):
    required_scopes = {"GET": SCOPE_ADMIN}
    # the body is the streamed JSON Lines file, written as it is; a renderer answers only an error, in plain
    # JSON (no browsable page for a download)
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JSONErrorsOnly  # errors in JSON whatever the client accepts (JSONErrorsOnly says why)

    @extend_schema(
        tags=TAGS,
        operation_id="bank_export",
        summary="Export the memory bank",
        description=(
            "Every memory of the organization, or of one `project`, with all its fields, links, lineage, "
            "confidence signals and their rolled-up counts, consolidated summaries, learned signal weights and "
            f"the session ledger, as JSON Lines (version {VERSION} of the ReasoningBank export format, described in "
            "docs/export-import.md): a header line first, an end line with the counts last "
            "(a file without it was cut short). The body streams, so a bank of any size exports in constant "
            "memory. Embeddings are left out unless `embeddings=true`. The export is audited. Needs `admin`."
        ),
        parameters=[ExportQuerySerializer],
        responses={
            (200, MEDIA_TYPE): OpenApiResponse(OpenApiTypes.STR, description="the export, one JSON object per line"),
            **error_responses(400, 401, 403, 404),
        },
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        params = ExportQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        scope = export_scope(
            self.principal, project=params.validated_data.get("project"), embeddings=params.validated_data["embeddings"]
        )
        bank_export_record(principal=self.principal, project=scope.project, embeddings=scope.embeddings)
        lines = export_lines(scope)
        asynchronous = isinstance(request._request, ASGIRequest)
        response = StreamingHttpResponse(
            _async_chunks(lines) if asynchronous else _sync_chunks(lines), content_type=MEDIA_TYPE
        )
        name = "-".join(filter(None, [self.org.slug, scope.project.slug if scope.project else None]))
        stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        response["Content-Disposition"] = f'attachment; filename="{name}-{stamp}.jsonl"'
        response["Cache-Control"] = "no-store"
        return response


class ImportRequestSerializer(StrictSerializer):
    format = serializers.ChoiceField(
        choices=list(FORMATS),
        required=False,
        default="reasoningbank",
        help_text="reasoningbank (this server's export), claude-md (a CLAUDE.md or memory markdown file) or "
        "mem0 (a mem0 export)",
    )
    text = StrictCharField(
        trim_whitespace=False,
        help_text="the file's text; at most IMPORT_MAX_BYTES bytes of UTF-8 (1 MiB unless configured; a 413 "
        "above): import larger files with manage.py import_memories",
    )
    project = StrictCharField(
        required=False,
        max_length=50,
        help_text="a project's slug: every memory goes into it (required for claude-md and mem0 unless the "
        "token reaches one project). Without it a ReasoningBank file keeps its places, creating missing "
        "projects and teams",
    )
    dry_run = StrictBooleanField(required=False, default=False, help_text="check everything, write nothing")
    source_name = StrictCharField(
        required=False,
        max_length=100,
        help_text="the file's name: kept in every imported memory's provenance (claude-md: also used in the "
        "memories' descriptions)",
    )
    reviewed = StrictBooleanField(
        required=False,
        default=False,
        help_text="you read the file and vouch for it: its memories are trusted for automatic injection at once "
        "(audited). Without it they are imported pending: searchable, but not injected until a person reviews them",
    )


class ImportQuerySerializer(StrictQuerySerializer):
    # the options of an import whose body is the file itself (application/x-ndjson)

    format = serializers.ChoiceField(
        choices=list(FORMATS),
        required=False,
        default="reasoningbank",
        help_text="with an application/x-ndjson body: reasoningbank (this server's export, the default) or mem0 "
        "(a mem0 export as JSON Lines)",
    )
    project = serializers.SlugField(
        required=False, max_length=50, help_text="with an application/x-ndjson body: as `project` in the JSON form"
    )
    dry_run = serializers.BooleanField(
        required=False, default=False, help_text="with an application/x-ndjson body: check everything, write nothing"
    )
    source_name = serializers.CharField(
        required=False, max_length=100, help_text="with an application/x-ndjson body: as in the JSON form"
    )
    reviewed = serializers.BooleanField(
        required=False, default=False, help_text="with an application/x-ndjson body: as in the JSON form"
    )


class JSONLinesParser(BaseParser):
    """The exported file as the body: its text, decoded as UTF-8 (the lines are checked by the import,
    which names each bad one)."""

    media_type = MEDIA_TYPE

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> str:
        raw = stream.read() if stream is not None else b""
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise ParseError(f"The body is not UTF-8 text: line {line} holds byte 0x{raw[exc.start]:02x}.") from None


class ImportSkippedSerializer(serializers.Serializer):
    where = serializers.CharField(help_text="the entry's line or item")
    reason = serializers.CharField(help_text="duplicate, or the write gate's reason (empty, placeholder, …)")
    message = serializers.CharField()


class ImportResultSerializer(serializers.Serializer):
    format = serializers.CharField()
    dry_run = serializers.BooleanField(help_text="nothing was written")
    project = serializers.CharField(allow_null=True, help_text="the one project every memory went into, if any")
    created = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="rows created (or, in a dry run, that would be) by line type: memory, link, signal, summary, "
        "session_use, weights",
    )
    projects_created = serializers.ListField(child=serializers.CharField(), help_text="slugs of new projects")
    teams_created = serializers.ListField(child=serializers.CharField(), help_text="slugs of new teams")
    skipped = ImportSkippedSerializer(many=True, help_text="entries not imported, and why")
    warnings = serializers.ListField(child=serializers.CharField())
    memory_ids = serializers.DictField(
        child=serializers.CharField(), help_text="each memory id of the file → the id of the memory it became"
    )
    quarantined = serializers.IntegerField(
        help_text="memories that landed in quarantine: the instruction-smell detector flagged them (or the file "
        "held them so); they wait for an admin's review and are not searched or injected until then (0 in a dry run)"
    )
    held_summaries = serializers.IntegerField(help_text="summaries held for review the same way")
    flagged = serializers.IntegerField(
        help_text="memories stored active with the detector's flags (the organization flags instead of quarantining)"
    )
    trust = serializers.ChoiceField(
        choices=["trusted", "pending"],
        help_text="the imported memories' trust: pending (not injected until a person reviews them) unless the "
        "import said `reviewed`",
    )


def _import_arguments(request: Request) -> dict[str, Any]:
    """The import's arguments from either form of the request, validated the same way: the JSON form
    holds them all in its body (a query string beside it would be ignored, so it is refused); the
    JSON Lines form sends the file as the body and the options as query parameters."""
    if (request.content_type or "").split(";")[0].strip().lower() == MEDIA_TYPE:
        params = ImportQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        text = request.data if isinstance(request.data, str) else ""  # DRF parses no empty body
        if not text.strip():
            raise ValidationError({"text": ["The body is empty: send the exported file."]})
        return {**params.validated_data, "text": text}
    if request.query_params:
        names = ", ".join(sorted(request.query_params))
        raise ValidationError(
            {name: [f"Query parameters ({names}) go with an {MEDIA_TYPE} body; a JSON body holds every option."]
             for name in request.query_params}
        )  # fmt: skip
    data = ImportRequestSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    return dict(data.validated_data)


class ImportView(OrgAPIView):
    required_scopes = {"POST": SCOPE_ADMIN}
    # the one endpoint that differs from the API's JSON-only default (REST_FRAMEWORK's DEFAULT_PARSER_CLASSES):
    # a bank also comes as JSON Lines, one memory a line (docs/export-import.md)
    parser_classes = [JSONParser, JSONLinesParser]
    content_negotiation_class = FormatIsAnOption  # ?format= names the file's format (FormatIsAnOption says why)

    @extend_schema(
        tags=TAGS,
        operation_id="bank_import",
        summary="Import a memory bank",
        description=(
            "Bring memories in: a ReasoningBank export (`format` reasoningbank), a CLAUDE.md or memory markdown "
            "file (claude-md: each section, or each item of a section that is one list, becomes a memory) or a "
            "mem0 export (mem0). Every line is checked before anything is written: a bad file is a 400 whose "
            "`errors` name each line at fault (`line 12`) and the field, and nothing is imported. A valid file "
            "is written in one transaction, every memory and summary under a new id (`memory_ids` maps them) "
            "with every reference rewritten, and re-embedded with the configured embedder. Every text passes the "
            "instruction-smell detector as a recorded one does: what it flags lands in quarantine (`quarantined`, "
            "`held_summaries`; the file's own quarantined memories stay there) for an admin's review. `dry_run` "
            "checks only. The import is audited. Needs `admin`.\n\n"
            "Two forms of the same request: a JSON body (`text` holds the file, the options beside it), or "
            f"the exported file itself as the body with `Content-Type: {MEDIA_TYPE}` and the options as query "
            "parameters (`curl --data-binary @bank.jsonl -H 'Content-Type: application/x-ndjson' "
            "'…/api/v1/import?dry_run=true'`). Both are checked, limited and answered the same way."
        ),
        parameters=[ImportQuerySerializer],
        request={"application/json": ImportRequestSerializer, MEDIA_TYPE: OpenApiTypes.STR},
        responses={200: ImportResultSerializer, **error_responses(400, 401, 403, 404, 413, 415)},
    )
    def post(self, request: Request) -> Response:
        args = _import_arguments(request)
        if not args["dry_run"]:  # one write for the write limits, whatever the file holds (the plan bounds memories)
            write_admit(self.principal)
        try:
            result = bank_import(
                principal=self.principal,
                source=args["text"],
                fmt=args["format"],
                project=args.get("project"),
                dry_run=args["dry_run"],
                max_bytes=settings.IMPORT_MAX_BYTES,
                source_name=args.get("source_name") or "CLAUDE.md",
                file_name=args.get("source_name") or "",
                reviewed=args["reviewed"],
            )
        except ImportInvalid as exc:
            return Response(error_body(exc.message, exc.code, exc.by_place()), status=exc.status)
        return Response(ImportResultSerializer(result).data)
