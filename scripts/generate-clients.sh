#!/usr/bin/env bash
# Regenerates both client SDKs' types from the OpenAPI schema the code serves now (docs/sdks.md#regenerating):
# clients/python/reasoningbank_client/models.py, clients/typescript/src/schema.d.ts and the TypeScript build (dist/).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
./scripts/ensure-ts-client.sh
schema=clients/typescript/openapi.json
# DEBUG=1: the settings would otherwise want a SECRET_KEY, which a schema does not need
DEBUG=1 .venv/bin/python manage.py spectacular --format openapi-json --file "$schema" 2>/dev/null
(cd clients/python && ../../.venv/bin/python generate_models.py "../../$schema" > reasoningbank_client/models.py)
(cd clients/typescript && npm run --silent generate && npm run --silent build)
echo "regenerated clients/python/reasoningbank_client/models.py, clients/typescript/src/schema.d.ts and dist/"
