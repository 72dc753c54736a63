"""REST: the organization's trusted OAuth clients (docs/security/memory-poisoning.md#trusted-oauth-clients) —
thin: parse, call the service or selector, render. Texts in ``extend_schema`` are the public API
documentation (no class docstrings on the views: drf-spectacular would publish them)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_ADMIN
from memories.trust.provenance_selectors import oauth_clients_trusted
from memories.trust.provenance_services import CLIENT_ID_MAX, oauth_client_trust_set
from reasoningbank.api_errors import error_responses
from reasoningbank.serializers import StrictBooleanField, StrictCharField, StrictSerializer

TAGS = ["organization"]


class TrustedClientSerializer(serializers.Serializer):
    client_id = serializers.CharField()
    name = serializers.CharField(allow_blank=True, help_text="the app's name (empty: no longer registered)")


class TrustedClientsSerializer(serializers.Serializer):
    trusted_oauth_clients = TrustedClientSerializer(many=True)


class ClientTrustRequestSerializer(StrictSerializer):
    client_id = StrictCharField(max_length=CLIENT_ID_MAX, help_text="the OAuth client's id (Settings → Connected apps)")
    trusted = StrictBooleanField(
        required=False, default=True, help_text="true (the default) trusts the client; false stops trusting it"
    )


class ClientTrustResultSerializer(TrustedClientsSerializer):
    client_id = serializers.CharField()
    trusted = serializers.BooleanField()
    memories_cleared = serializers.IntegerField(
        help_text="the client's pending memories without a flag that are trusted now (0 when the trust was taken back)"
    )


class TrustedOAuthClientsView(OrgAPIView):
    required_scopes = {"GET": SCOPE_ADMIN, "POST": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="trusted_oauth_clients_retrieve",
        summary="The trusted OAuth clients",
        description=(
            "The OAuth clients (MCP clients members connected through the browser) whose agents' memories are "
            "trusted for automatic injection without a person's review, when the member who connected them is a "
            "member or above. Every other app's memories wait for review. Needs `admin`."
        ),
        responses={200: TrustedClientsSerializer, **error_responses(401, 403)},
    )
    def get(self, request: Request) -> Response:
        return Response({"trusted_oauth_clients": oauth_clients_trusted(self.principal)})

    @extend_schema(
        tags=TAGS,
        operation_id="trusted_oauth_clients_set",
        summary="Trust an OAuth client, or stop trusting it",
        description=(
            "`trusted: true` adds the client to the organization's trusted clients and clears its pending "
            "memories that the instruction-smell detector did not flag (those it recorded, or that were distilled "
            "from sessions it handed in, for a member or above). `trusted: false` takes the trust back: its later "
            "memories wait for review again; the ones already cleared stay trusted. Audited "
            "(`org.oauth_client_trust`, `org.oauth_client_distrust`). Needs `admin` and a token not restricted to "
            "some projects."
        ),
        request=ClientTrustRequestSerializer,
        responses={200: ClientTrustResultSerializer, **error_responses(400, 401, 403, 415)},
    )
    def post(self, request: Request) -> Response:
        body = ClientTrustRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        change = oauth_client_trust_set(
            principal=self.principal, client_id=body.validated_data["client_id"], trusted=body.validated_data["trusted"]
        )
        return Response(
            {
                "client_id": change.client_id,
                "trusted": change.trusted,
                "memories_cleared": change.memories_cleared,
                "trusted_oauth_clients": oauth_clients_trusted(self.principal),
            }
        )
