import type { StackClock } from '../core/clock.ts';
import { Container } from './container.ts';
import { errors } from './errors.ts';
import {
  type ContainerResource,
  containerRid,
  type DatabaseResource,
  databaseRid,
  newEtag,
} from './model.ts';
import type { LogRecord, Snapshot } from './store.ts';

interface Database {
  resource: DatabaseResource;
  containers: Map<string, Container>;
}

const ILLEGAL_NAME = /[/\\#?]|\s$/;

function checkName(body: unknown): Record<string, unknown> & { id: string } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw errors.invalidPayload();
  const { id } = body as { id?: unknown };
  if (id === undefined || id === '') {
    throw errors.badRequest(
      "The input content is invalid because the required properties - 'id; ' - are missing",
    );
  }
  if (typeof id !== 'string' || ILLEGAL_NAME.test(id) || id.length > 255) {
    throw errors.badRequest(
      `The input name '${String(id)}' is invalid. Ensure to provide a unique non-empty string less than '255' characters.`,
    );
  }
  return body as Record<string, unknown> & { id: string };
}

/** The account: databases holding containers. Metadata changes return the log records to persist. */
export class Account {
  readonly databases = new Map<string, Database>();

  constructor(private readonly clock: StackClock) {}

  #ts = () => Math.floor(this.clock.now() / 1000);

  database(id: string): Database {
    const database = this.databases.get(id);
    if (!database) throw errors.resourceNotFound();
    return database;
  }

  container(db: string, id: string): Container {
    const container = this.database(db).containers.get(id);
    if (!container) throw errors.resourceNotFound();
    return container;
  }

  createDatabase(body: unknown): { resource: DatabaseResource; records: LogRecord[] } {
    const { id } = checkName(body);
    if (this.databases.has(id)) throw errors.conflict();
    const rid = databaseRid();
    const resource: DatabaseResource = {
      id,
      _rid: rid,
      _self: `dbs/${rid}/`,
      _etag: newEtag(),
      _colls: 'colls/',
      _users: 'users/',
      _ts: this.#ts(),
    };
    this.databases.set(id, { resource, containers: new Map() });
    return { resource, records: [{ t: 'db', db: resource }] };
  }

  deleteDatabase(id: string): LogRecord[] {
    this.database(id);
    this.databases.delete(id);
    return [{ t: 'dropDb', db: id }];
  }

  createContainer(db: string, body: unknown): { resource: ContainerResource; records: LogRecord[] } {
    const database = this.database(db);
    const definition = checkName(body);
    const partitionKey = (definition.partitionKey as ContainerResource['partitionKey'] | undefined) ?? {
      paths: ['/_partitionKey'],
      kind: 'Hash',
    };
    if (
      !Array.isArray(partitionKey.paths) ||
      !partitionKey.paths.every((p) => typeof p === 'string' && p.startsWith('/'))
    ) {
      throw errors.badRequest(
        'The partition key definition is invalid. Partition key paths must start with /.',
      );
    }
    if (database.containers.has(definition.id)) throw errors.conflict();
    const rid = containerRid(database.resource._rid);
    const resource: ContainerResource = {
      indexingPolicy: {
        indexingMode: 'consistent',
        automatic: true,
        includedPaths: [{ path: '/*' }],
        excludedPaths: [],
      },
      ...definition,
      partitionKey: { kind: 'Hash', version: 2, ...partitionKey },
      conflictResolutionPolicy: {
        mode: 'LastWriterWins',
        conflictResolutionPath: '/_ts',
        conflictResolutionProcedure: '',
      },
      geospatialConfig: { type: 'Geography' },
      _rid: rid,
      _ts: this.#ts(),
      _self: `${database.resource._self}colls/${rid}/`,
      _etag: newEtag(),
      _docs: 'docs/',
      _sprocs: 'sprocs/',
      _triggers: 'triggers/',
      _udfs: 'udfs/',
      _conflicts: 'conflicts/',
    };
    database.containers.set(resource.id, new Container(db, resource, this.clock));
    return { resource, records: [{ t: 'coll', db, coll: resource }] };
  }

  /** Replaces a container's settings (indexing policy, TTL...); its id and partition key stay. */
  replaceContainer(
    db: string,
    id: string,
    body: unknown,
  ): { resource: ContainerResource; records: LogRecord[] } {
    const container = this.container(db, id);
    const definition = checkName(body);
    if (definition.id !== id)
      throw errors.badRequest('The value of the id in the URL and the id in the body must be the same.');
    const current = container.resource;
    const resource: ContainerResource = {
      ...current,
      ...definition,
      partitionKey: current.partitionKey,
      _rid: current._rid,
      _self: current._self,
      _etag: newEtag(),
      _ts: this.#ts(),
    };
    container.resource = resource;
    return { resource, records: [{ t: 'coll', db, coll: resource }] };
  }

  deleteContainer(db: string, id: string): LogRecord[] {
    this.container(db, id);
    this.database(db).containers.delete(id);
    return [{ t: 'dropColl', db, coll: id }];
  }

  /** Replays one log record on load. Records carry whole states, so replaying twice is harmless. */
  apply(record: LogRecord): void {
    switch (record.t) {
      case 'db':
        if (!this.databases.has(record.db.id))
          this.databases.set(record.db.id, { resource: record.db, containers: new Map() });
        break;
      case 'dropDb':
        this.databases.delete(record.db);
        break;
      case 'coll': {
        const containers = this.databases.get(record.db)?.containers;
        const existing = containers?.get(record.coll.id);
        if (existing) existing.resource = record.coll;
        else containers?.set(record.coll.id, new Container(record.db, record.coll, this.clock));
        break;
      }
      case 'dropColl':
        this.databases.get(record.db)?.containers.delete(record.coll);
        break;
      case 'put':
      case 'del': {
        const container = this.databases.get(record.db)?.containers.get(record.coll);
        container?.apply(
          record.key,
          record.t === 'put' ? { item: record.item, lsn: record.lsn } : undefined,
          record.lsn,
        );
      }
    }
  }

  load(snapshot: Snapshot): void {
    for (const { db, containers } of snapshot.databases) {
      this.apply({ t: 'db', db });
      for (const { coll, lsn, items } of containers) {
        this.apply({ t: 'coll', db: db.id, coll });
        const container = this.container(db.id, coll.id);
        for (const [key, entry] of items) container.apply(key, entry, entry.lsn);
        container.lsn = Math.max(container.lsn, lsn);
      }
    }
  }

  dump(): Snapshot {
    return {
      databases: [...this.databases.values()].map(({ resource, containers }) => ({
        db: resource,
        containers: [...containers.values()].map((container) => ({
          coll: container.resource,
          lsn: container.lsn,
          items: [...container.entries].map(
            ([key, { item, lsn }]) => [key, { item, lsn }] as [string, { item: typeof item; lsn: number }],
          ),
        })),
      })),
    };
  }
}
