/**
 * One invocation, as the worker runs it: the host reads the input bindings, the library's programming
 * model builds the arguments (inputs land in `context.extraInputs`), hooks run around the handler, the
 * model converts the result, then the host writes the output bindings. Adds what the host does around
 * it: the Executing/Executed lines, failures that never escape, and functionTimeout.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type {
  AppRegistry,
  CoreInvocationContext,
  LogCategory,
  LogLevel,
  RegisteredFunction,
  RpcInvocationResponse,
  RpcParameterBinding,
  RpcRetryContext,
  RpcTypedData,
} from './core-api.ts';
import type { FunctionLogs } from './logs.ts';

/** What a trigger hands the host for one invocation. */
export interface TriggerInput {
  inputData: RpcParameterBinding[];
  triggerMetadata?: Record<string, RpcTypedData>;
  /** The `Reason='…'` of the Executing line. */
  reason: string;
  /** The trigger's details, logged after the Executing line (`Trigger Details: Key: value, …`). */
  triggerDetails?: Record<string, string>;
  /** Set when the trigger must know the id beforehand (HTTP streaming names it to the app's proxy). */
  invocationId?: string;
  /**
   * Values binding expressions such as `{name}` may use in input and output paths; a function when
   * they cost something to build (an HTTP request's), so that they are built only if a binding reads them.
   */
  bindingData?: Record<string, unknown> | BindingData;
  /** Set when a retry policy applies (retry.ts). */
  retryContext?: RpcRetryContext;
  /**
   * The trigger's value could not be bound (an admin API input the trigger cannot read): the invocation
   * fails with this before the function runs, as the runtime's binding fails inside the invocation.
   */
  failure?: Error;
}

export interface InvocationOutcome {
  invocationId: string;
  succeeded: boolean;
  timedOut: boolean;
  response?: RpcInvocationResponse;
  /** What a failed run threw. */
  error?: unknown;
}

/** An invocation's binding data, built at most once, when a binding first reads it. */
export type BindingData = () => Record<string, unknown>;

function lazily(data: TriggerInput['bindingData']): BindingData {
  if (typeof data !== 'function') return () => data ?? {};
  let built: Record<string, unknown> | undefined;
  return () => {
    built ??= data();
    return built;
  };
}

/** Writes a finished invocation's output bindings (blob, Event Grid …). Throwing fails the invocation. */
export type OutputWriter = (
  fn: RegisteredFunction,
  response: RpcInvocationResponse,
  bindingData: BindingData,
) => Promise<void>;

/** Reads a function's input bindings (blob, Cosmos DB …) as input data. Throwing fails the invocation. */
export type InputReader = (
  fn: RegisteredFunction,
  bindingData: BindingData,
) => Promise<RpcParameterBinding[]>;

class FunctionTimeoutError extends Error {}

/**
 * What the Node worker reports for a thrown value (its `ensureErrorType`): an Error as it is; anything
 * else becomes an Error whose message is the text (`'Unknown error'` for null/undefined, a string as
 * is, an object as JSON, the rest through String), so `throw { code: 42 }` reads `{"code":42}`, with
 * a stack of its own. (A handler that throws null or undefined has not failed, as in the worker.)
 */
export function asError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  let message: string;
  if (thrown === undefined || thrown === null) message = 'Unknown error';
  else if (typeof thrown === 'string') message = thrown;
  else if (typeof thrown === 'object') {
    // The worker's JSON.stringify would throw on a cycle; this host must not, so such a value reads as String's.
    try {
      message = JSON.stringify(thrown) ?? String(thrown);
    } catch {
      message = String(thrown);
    }
  } else message = String(thrown);
  return new Error(message);
}

/**
 * How long a function past functionTimeout may take to finish before its worker is restarted: the
 * runtime's grace (TimeoutAttribute.GracePeriod, 2 s) before the timeout is thrown, then as long again
 * while the host's timeout handler waits for the invocation.
 */
export const TIMEOUT_GRACE_MS = 4_000;

/** Called when a function is still running its grace after its timeout: its worker must restart. */
export type OnStuck = (fn: RegisteredFunction, invocationId: string) => void;

/** `hh:mm:ss` as the host prints timeouts. */
const timeSpan = (ms: number) => new Date(ms).toISOString().slice(11, 19);

export class Invoker {
  constructor(
    private readonly registry: AppRegistry,
    private readonly logs: FunctionLogs,
    private readonly timeoutMs: number | undefined,
    private readonly writeOutputs: OutputWriter,
    private readonly readInputs: InputReader,
    private readonly onStuck: OnStuck,
  ) {}

  /** Runs the app's `log` hooks (they may rewrite level and message), then logs. */
  log(
    fn: string,
    invocationId: string,
    level: LogLevel,
    category: LogCategory,
    message: string,
    context?: unknown,
  ) {
    const entry = {
      level,
      message,
      category,
      invocationContext: context,
      hookData: {},
      appHookData: this.registry.appHookData,
    };
    for (const hook of this.registry.hooks.log) {
      try {
        hook(entry);
      } catch {
        // A failing log hook must not take the invocation (or the host) down with it.
      }
    }
    if (category === 'user') this.logs.user(fn, invocationId, entry.level, entry.message);
    else this.logs.invocation(fn, invocationId, entry.level, entry.message);
  }

  async invoke(fn: RegisteredFunction, trigger: TriggerInput): Promise<InvocationOutcome> {
    const invocationId = trigger.invocationId ?? randomUUID();
    const started = performance.now();
    const say = (level: LogLevel, message: string) =>
      this.logs.invocation(fn.name, invocationId, level, message);
    say('information', `Executing 'Functions.${fn.name}' (Reason='${trigger.reason}', Id=${invocationId})`);
    const details = Object.entries(trigger.triggerDetails ?? {}).map(([key, value]) => `${key}: ${value}`);
    // As the WebJobs SDK's FunctionInstanceLogger writes them, when there are any.
    if (details.length) say('information', `Trigger Details: ${details.join(', ')}`);

    let timedOut = false;
    const work = this.#run(fn, invocationId, trigger, () => timedOut);
    try {
      const response = await this.#withinTimeout(work);
      say(
        'information',
        `Executed 'Functions.${fn.name}' (Succeeded, Id=${invocationId}, Duration=${this.#since(started)}ms)`,
      );
      return { invocationId, succeeded: true, timedOut, response };
    } catch (error) {
      if (error instanceof FunctionTimeoutError) {
        timedOut = true;
        // JavaScript cannot be pre-empted: the handler runs on, its result and outputs dropped
        // (#withinTimeout handles its late outcome), and past the grace its worker restarts.
        this.#unlessSettled(work, TIMEOUT_GRACE_MS, () => this.onStuck(fn, invocationId));
        say(
          'error',
          `Timeout value of ${timeSpan(this.timeoutMs ?? 0)} exceeded by function 'Functions.${fn.name}' (Id: '${invocationId}'). Initiating cancellation.`,
        );
      }
      say(
        'error',
        `Executed 'Functions.${fn.name}' (Failed, Id=${invocationId}, Duration=${this.#since(started)}ms)`,
      );
      if (!timedOut) {
        const { message, stack } = asError(error);
        // The runtime's RpcException text: `Result: …\nException: …\nStack: …` (an absent stack is empty).
        say(
          'error',
          `Exception while executing function: Functions.${fn.name}. Result: Failure\nException: ${message}\nStack: ${stack ?? ''}`,
        );
      }
      return { invocationId, succeeded: false, timedOut, error };
    }
  }

  /** `work`'s outcome, or a FunctionTimeoutError once functionTimeout has passed (one timer, no race). */
  #withinTimeout<T>(work: Promise<T>): Promise<T> {
    const timeoutMs = this.timeoutMs;
    if (timeoutMs === undefined) return work;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new FunctionTimeoutError()), timeoutMs);
      work.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  /** Calls `then` if `work` has not settled within `ms`. */
  #unlessSettled(work: Promise<unknown>, ms: number, then: () => void) {
    const timer = setTimeout(then, ms);
    work.then(
      () => clearTimeout(timer),
      () => clearTimeout(timer),
    );
  }

  #since(started: number): number {
    return Math.round(performance.now() - started);
  }

  async #run(
    fn: RegisteredFunction,
    invocationId: string,
    trigger: TriggerInput,
    cancelled: () => boolean,
  ): Promise<RpcInvocationResponse> {
    if (trigger.failure) throw trigger.failure;
    const model = this.registry.programmingModel;
    if (!model) throw new Error('the app never registered a programming model');
    let invocationContext: unknown;
    const bindingData = lazily(trigger.bindingData);
    // Input bindings are read first, inside the invocation (and its timeout), as the host binds them.
    const bound = await this.readInputs(fn, bindingData);
    const coreContext: CoreInvocationContext = {
      invocationId,
      request: {
        invocationId,
        functionId: fn.name,
        inputData: bound.length ? [...trigger.inputData, ...bound] : trigger.inputData,
        triggerMetadata: trigger.triggerMetadata,
        ...(trigger.retryContext && { retryContext: trigger.retryContext }),
      },
      metadata: { name: fn.name, bindings: fn.bindings },
      log: (level, category, message) =>
        this.log(fn.name, invocationId, level, category, message, invocationContext),
    };
    const invocation = model.getInvocationModel(coreContext);
    const { context, inputs } = await invocation.getArguments();
    invocationContext = context;
    const hookData = {};
    const appHookData = this.registry.appHookData;

    const pre = { hookData, appHookData, invocationContext: context, inputs, functionCallback: fn.callback };
    coreContext.state = 'preInvocationHooks';
    for (const hook of this.registry.hooks.preInvocation) await hook(pre);
    coreContext.state = 'invocation';
    const post = {
      hookData,
      appHookData,
      invocationContext: context,
      inputs: pre.inputs,
      result: null as unknown,
      error: null as unknown,
    };
    try {
      post.result = await invocation.invokeFunction(context, pre.inputs, pre.functionCallback);
    } catch (error) {
      post.error = error;
    }
    coreContext.state = 'postInvocationHooks';
    for (const hook of this.registry.hooks.postInvocation) await hook(post);
    coreContext.state = undefined;
    if (post.error !== null && post.error !== undefined) throw post.error;

    const response = await invocation.getResponse(context, post.result);
    if (!cancelled()) await this.writeOutputs(fn, response, bindingData);
    return response;
  }
}
