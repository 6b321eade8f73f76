// Bundled in place of `tough-cookie` (see azurite.ts): only the HTTP client of @azure/ms-rest-js keeps a
// cookie jar, and Azurite uses that package for its serializers alone. Loading it parsed the public
// suffix list (psl) at every start.
'use strict';
exports.CookieJar = class CookieJar {
  constructor() {
    throw new Error("@azure/ms-rest-js's HTTP client is not part of this stack's Azurite");
  }
};
