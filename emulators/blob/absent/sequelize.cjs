// Bundled in place of `sequelize` (see azurite.ts): Azurite keeps its metadata in LokiJS here, never in
// SQL. Its SQL store's modules still load, declaring their models as subclasses of `Model`.
'use strict';
exports.Model = class Model {};
exports.Sequelize = class Sequelize {
  constructor() {
    throw new Error("Azurite's SQL metadata store is not part of this stack (AZURITE_DB is not supported)");
  }
};
