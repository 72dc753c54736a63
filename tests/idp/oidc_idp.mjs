// The OpenID Connect provider the SSO tests sign in at: panva's certified oidc-provider (npm, pinned in
// package.json, installed by scripts/ensure-test-idps.sh), on loopback, as a process of its own.
//
//   node tests/idp/oidc_idp.mjs   with RB_IDP_PORT, RB_IDP_CLIENTS (JSON: [{client_id, client_secret,
//                                 redirect_uris}]) and RB_IDP_GROUPS (JSON: {login: ["group", ...]})
//
// Its own development sign-in page takes any login: the login typed is the account id, and an e-mail
// address typed there is the account's verified `email` claim; `groups` comes from RB_IDP_GROUPS, in the
// `profile` scope (as Okta's and Entra's group claims ride along with the scopes a client asks for).
import Provider from 'oidc-provider';

const port = Number(process.env.RB_IDP_PORT);
const issuer = `http://127.0.0.1:${port}`;
const clients = JSON.parse(process.env.RB_IDP_CLIENTS || '[]').map((client) => ({
  grant_types: ['authorization_code'],
  response_types: ['code'],
  token_endpoint_auth_method: 'client_secret_post',
  ...client,
}));
const groups = JSON.parse(process.env.RB_IDP_GROUPS || '{}');

const provider = new Provider(issuer, {
  clients,
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
  cookies: { keys: ['reasoningbank-test-idp-only'] },
  features: { devInteractions: { enabled: true } },
  // loopback http: the tests' relying party and this provider both run on 127.0.0.1
  pkce: { required: () => false },
  async findAccount(ctx, id) {
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          email: id.includes('@') ? id : undefined,
          email_verified: id.includes('@'),
          name: id.split('@')[0],
          groups: groups[id] || [],
        };
      },
    };
  },
});
provider.proxy = false;
const server = provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc idp ready at ${issuer}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
