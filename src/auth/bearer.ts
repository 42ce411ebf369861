/**
 * The `Authorization: Bearer <token>` header (RFC 6750 section 2.1, RFC 9110 section 11.4): the
 * scheme name is case-insensitive, one or more spaces separate it from exactly one token, and a
 * token is visible ASCII without spaces. Anything else carries no token.
 */

/** What a token may contain, in the header and in a token file: visible ASCII, no spaces. */
export const TOKEN_CHARS = /^[\x21-\x7e]+$/;

/** Linear on any input: the token class excludes the separators around it. */
const BEARER = /^[ \t]*bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;

/** The token of a well-formed bearer header, or undefined (absent, another scheme, two tokens). */
export function bearerToken(authorization: string): string | undefined {
  if (authorization.length === 0) return undefined;
  return BEARER.exec(authorization)?.[1];
}
