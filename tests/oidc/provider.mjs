// A real OpenID Connect provider for Grove's tests: oidc-provider in its stock claim set.
//
// Dynamic client registration (RFC 7591), PKCE (S256, required), resource indicators
// (RFC 8707), introspection (RFC 7662) and revocation, with the built-in development
// login and consent pages (any login and password; sub = the login).
//
// Configured from the environment: PORT (the issuer is http://127.0.0.1:PORT),
// RESOURCES (JSON: {"<resource URL>": {"format": "jwt" | "opaque"}}) and CLIENTS (JSON:
// static clients, e.g. the console and the introspecting resource server). It prints
// one JSON line {"event": "listening", "issuer": ...} once it serves.
import crypto from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const resources = JSON.parse(process.env.RESOURCES || '{}');
const clients = JSON.parse(process.env.CLIENTS || '[]');
const signing = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;

const provider = new Provider(issuer, {
  clients,
  jwks: { keys: [{ ...signing.export({ format: 'jwk' }), kid: 'test-rs256', alg: 'RS256', use: 'sig' }] },
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  pkce: { required: () => true },
  scopes: ['openid', 'offline_access', 'profile', 'email'],
  ttl: { AccessToken: Number(process.env.ACCESS_TOKEN_TTL || 600) },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx, client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => {
        const known = resources[resource];
        if (!known) throw new errors.InvalidTarget();
        return {
          scope: known.scope || '',
          audience: resource,
          accessTokenFormat: known.format || 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
});
provider.proxy = false;
provider.listen(port, '127.0.0.1', () => {
  console.log(JSON.stringify({ event: 'listening', issuer }));
});
