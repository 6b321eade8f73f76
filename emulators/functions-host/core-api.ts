/**
 * The `@azure/functions-core` module, as the Node.js worker provides it: the app's copy of
 * `@azure/functions` requires it on its first `app.*` call and hands us every registration, hook and
 * its programming model. Shapes follow the worker's `types-core` (only what this host uses).
 */
import Module from 'node:module';

export type LogLevel = 'trace' | 'debug' | 'information' | 'warning' | 'error' | 'critical' | 'none';
export type LogCategory = 'user' | 'system' | 'customMetric';

export interface RpcNullable<T> {
  value?: T | null;
}

export interface RpcHttpCookie {
  name?: string | null;
  value?: string | null;
  domain?: RpcNullable<string> | null;
  path?: RpcNullable<string> | null;
  expires?: RpcNullable<{ seconds?: number | null; nanos?: number | null }> | null;
  secure?: RpcNullable<boolean> | null;
  httpOnly?: RpcNullable<boolean> | null;
  sameSite?: 'none' | 'lax' | 'strict' | 'explicitNone' | null;
  maxAge?: RpcNullable<number> | null;
}

export interface RpcHttpData {
  method?: string | null;
  url?: string | null;
  headers?: Record<string, string> | null;
  query?: Record<string, string> | null;
  body?: RpcTypedData | null;
  params?: Record<string, string> | null;
  statusCode?: string | null;
  cookies?: RpcHttpCookie[] | null;
}

export interface RpcTypedData {
  string?: string | null;
  json?: string | null;
  bytes?: Uint8Array | null;
  http?: RpcHttpData | null;
  int?: number | null;
  double?: number | null;
  collectionBytes?: { bytes?: Uint8Array[] | null } | null;
  collectionString?: { string?: string[] | null } | null;
  collectionDouble?: { double?: number[] | null } | null;
  collectionSint64?: { sint64?: number[] | null } | null;
}

export interface RpcParameterBinding {
  name?: string | null;
  data?: RpcTypedData | null;
}

export interface RpcInvocationResponse {
  invocationId?: string | null;
  outputData?: RpcParameterBinding[] | null;
  returnValue?: RpcTypedData | null;
}

/** A binding as the library registers it: `type`, `direction` and the binding's own options. */
export interface BindingInfo {
  type: string;
  direction: 'in' | 'out' | 'inout';
  dataType?: string;
  [option: string]: unknown;
}

export type FunctionCallback = (...args: unknown[]) => unknown;

/** The worker's RetryContext: which retry this run is (0 for the first run) and why. */
export interface RpcRetryContext {
  retryCount: number;
  maxRetryCount: number;
  exception?: { message: string; stackTrace: string; source: string };
}

export interface CoreInvocationContext {
  invocationId: string;
  request: {
    invocationId: string;
    functionId: string;
    inputData: RpcParameterBinding[];
    triggerMetadata?: Record<string, RpcTypedData>;
    retryContext?: RpcRetryContext;
  };
  metadata: { name: string; bindings: Record<string, BindingInfo> };
  state?: 'preInvocationHooks' | 'postInvocationHooks' | 'invocation';
  log(level: LogLevel, category: LogCategory, message: string): void;
}

export interface InvocationModel {
  getArguments(): Promise<{ context: unknown; inputs: unknown[] }>;
  invokeFunction(context: unknown, inputs: unknown[], callback: FunctionCallback): Promise<unknown>;
  getResponse(context: unknown, result: unknown): Promise<RpcInvocationResponse>;
}

export interface ProgrammingModel {
  name: string;
  version: string;
  getInvocationModel(context: CoreInvocationContext): InvocationModel;
  /** Called once the app has loaded; answers `HttpUri` when the app enabled HTTP streaming. */
  getCapabilities?(capabilities: Record<string, string>): Promise<Record<string, string>>;
}

export interface RegisteredFunction {
  name: string;
  bindings: Record<string, BindingInfo>;
  callback: FunctionCallback;
  /** The function's retry policy (`retry` in app.eventHub/app.timer …), as the library registers it. */
  retryOptions?: RetryOptions;
}

/** A retry policy as the library registers it (whole seconds, as its toRpcDuration; host.json's may hold fractions). */
export interface RetryOptions {
  retryStrategy?: string;
  maxRetryCount?: number;
  delayInterval?: { seconds?: number };
  minimumInterval?: { seconds?: number };
  maximumInterval?: { seconds?: number };
}

export type HookName = 'appStart' | 'appTerminate' | 'preInvocation' | 'postInvocation' | 'log';
type HookCallback = (context: Record<string, unknown>) => unknown;

class Disposable {
  static from(...items: { dispose(): unknown }[]) {
    return new Disposable(() => {
      for (const item of items) item.dispose();
    });
  }
  constructor(private readonly callOnDispose: () => unknown) {}
  dispose() {
    return this.callOnDispose();
  }
}

/** Everything the app registered. One per process: the library caches the core module it was given. */
export class AppRegistry {
  readonly functions = new Map<string, RegisteredFunction>();
  readonly hooks: Record<HookName, HookCallback[]> = {
    appStart: [],
    appTerminate: [],
    preInvocation: [],
    postInvocation: [],
    log: [],
  };
  /** Shared by every hook of the app (`appHookData`). */
  readonly appHookData: Record<string, unknown> = {};
  /** The `hookData` of appStart and appTerminate, shared between the two only. */
  readonly appLevelHookData: Record<string, unknown> = {};
  programmingModel: ProgrammingModel | undefined;
  #locked = false;

  constructor(private readonly systemLog: (level: LogLevel, message: string) => void) {}

  /** Ends the registration window, as the worker does once indexing has finished. */
  lock(): void {
    this.#locked = true;
  }

  /** Functions are looked up case-insensitively, as the host does. */
  find(name: string): RegisteredFunction | undefined {
    return this.functions.get(name.toLowerCase());
  }

  readonly api = {
    version: '3.10.1',
    hostVersion: '4.1036.1',
    Disposable,
    registerFunction: (
      metadata: {
        name: string;
        bindings: Record<string, BindingInfo>;
        retryOptions?: RetryOptions;
      },
      callback: FunctionCallback,
    ) => {
      if (this.#locked) throw new Error('A function can only be registered during app startup.');
      const key = metadata.name.toLowerCase();
      if (this.functions.has(key))
        throw new Error(`A function with the name "${metadata.name}" has already been registered.`);
      this.functions.set(key, {
        name: metadata.name,
        bindings: metadata.bindings,
        callback,
        ...(metadata.retryOptions && { retryOptions: metadata.retryOptions }),
      });
      return new Disposable(() => {
        if (this.#locked) throw new Error('A function can only be disposed during app startup.');
        this.functions.delete(key);
      });
    },
    registerHook: (hookName: string, callback: HookCallback) => {
      const hooks = this.hooks[hookName as HookName];
      if (!hooks) throw new RangeError(`Unrecognized hook "${hookName}"`);
      hooks.push(callback);
      return new Disposable(() => {
        const index = hooks.indexOf(callback);
        if (index >= 0) hooks.splice(index, 1);
      });
    },
    setProgrammingModel: (model: ProgrammingModel) => {
      this.programmingModel = model;
    },
    getProgrammingModel: () => this.programmingModel,
    log: (level: LogLevel, _category: LogCategory, message: string) => this.systemLog(level, message),
  };
}

let installed: AppRegistry | undefined;

/**
 * Makes `require('@azure/functions-core')` return the registry's API, as the worker's require hook
 * does. ESM apps reach it too: the library itself is CommonJS and requires it lazily.
 */
export function installCoreApi(registry: AppRegistry): void {
  if (installed) throw new Error('only one functions host can run per process (the app caches its runtime)');
  installed = registry;
  const proto = Module.prototype as unknown as { require: (id: string) => unknown };
  proto.require = new Proxy(proto.require, {
    apply(target, self, args: [string]) {
      return args[0] === '@azure/functions-core' ? registry.api : Reflect.apply(target, self, args);
    },
  });
}
