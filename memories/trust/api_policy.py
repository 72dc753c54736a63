"""REST view of the organization's trust policy (docs/security/memory-poisoning.md#the-trust-policy): its
poisoning policy, injection policy and trusted hosts as one resource — thin: parse, call the selector or
the service, serialize. Texts in ``extend_schema`` are the public API documentation."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import SCOPE_ADMIN, SCOPE_MEMORIES_READ
from memories.core.api import MemoryAPIView, serializer_validate
from memories.trust.selectors_policy import INJECTION_POLICIES, POISONING_POLICIES, trust_policy_get
from memories.trust.services_policy import trust_policy_set
from reasoningbank.api_errors import error_responses
from reasoningbank.poisoning.remote_code import TRUSTED_HOST_MAX_LENGTH, TRUSTED_HOSTS_MAX
from reasoningbank.serializers import StrictCharField, StrictSerializer

TAGS = ["trust"]
POISONING_HELP = (
    "what the instruction-smell detector does with a memory it flags: `quarantine` (the default: held for an "
    "admin's review, never served until approved), `flag` (stored active with its findings in `flags`), `off` "
    "(nothing is screened)"
)
INJECTION_HELP = (
    "what the hooks and memory_context inject automatically: `trusted` (the default: active memories written by "
    "a member or above, or cleared by an admin), `reviewed` (only those a person reviewed), `all` (every active "
    "memory); an explicit search is not affected"
)
HOSTS_HELP = (
    f"hosts a fetched script may be piped into a shell from without a flag, beside the well-known installers; at "
    f"most {TRUSTED_HOSTS_MAX}, each a host (`tools.acme.dev`), a host and a path prefix "
    f"(`raw.githubusercontent.com/acme/`) or a domain with a leading dot for its subdomains (`.acme.dev`); an "
    f"http(s):// prefix is dropped, names are lowered (an internationalised one kept in its `xn--` form) and "
    f"duplicates removed; IP addresses, ports and wildcards are refused"
)


class TrustPolicySerializer(serializers.Serializer):
    poisoning_policy = serializers.ChoiceField(choices=list(POISONING_POLICIES), help_text=POISONING_HELP)
    injection_policy = serializers.ChoiceField(choices=list(INJECTION_POLICIES), help_text=INJECTION_HELP)
    trusted_hosts = serializers.ListField(child=serializers.CharField(), help_text=HOSTS_HELP)


class TrustPolicyUpdateSerializer(StrictSerializer):
    poisoning_policy = serializers.ChoiceField(choices=list(POISONING_POLICIES), required=False)
    injection_policy = serializers.ChoiceField(choices=list(INJECTION_POLICIES), required=False)
    trusted_hosts = serializers.ListField(
        child=StrictCharField(max_length=TRUSTED_HOST_MAX_LENGTH + 20, allow_blank=True),  # a scheme is dropped
        max_length=TRUSTED_HOSTS_MAX * 2,  # blanks and duplicates are dropped before the count that matters
        required=False,
        help_text="the whole list: it replaces the one kept (`[]` trusts no host of your own)",
    )


class TrustPolicyView(MemoryAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ, "PATCH": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="trust_policy_retrieve",
        summary="The trust policy",
        description=(
            "The organization's poisoning policy, injection policy and trusted hosts "
            "(docs/security/memory-poisoning.md). Needs `memories:read`."
        ),
        responses={200: TrustPolicySerializer, **error_responses(401, 403)},
    )
    def get(self, request: Request) -> Response:
        return Response(TrustPolicySerializer(trust_policy_get(self.principal.organization)).data)

    @extend_schema(
        tags=TAGS,
        operation_id="trust_policy_update",
        summary="Change the trust policy",
        description=(
            "Change any of `poisoning_policy`, `injection_policy` and `trusted_hosts`; the fields not given stay "
            "as they are, and nothing changes unless every given field is valid (a bad host is a 400 naming the "
            "entry). Each changed field is audited (`organization.<field>`, with `from` and `to`). Needs `admin` "
            "and a token for the whole organization (a token restricted to some projects is a 403)."
        ),
        request=TrustPolicyUpdateSerializer,
        responses={200: TrustPolicySerializer, **error_responses(400, 401, 403, 415)},
    )
    def patch(self, request: Request) -> Response:
        changes = serializer_validate(TrustPolicyUpdateSerializer, request.data)
        organization = trust_policy_set(principal=self.principal, changes=changes)
        return Response(TrustPolicySerializer(trust_policy_get(organization)).data)
