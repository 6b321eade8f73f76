// Bundled in place of `applicationinsights` (see azurite.ts): Azurite's telemetry is off in this stack
// (--disableTelemetry) and could not reach its endpoint offline anyway.
'use strict';
exports.setup = () => {
  throw new Error("Azurite's telemetry is not part of this stack");
};
