/**
 * The web app's task: camelCase fields, as the spec's web task API names them. Input comes from the
 * JSON API or the Create form; both are checked here so that the two accept exactly the same tasks.
 */
import { randomUUID } from 'node:crypto';

export interface Task {
  id: string;
  title: string;
  description: string | null;
  dueDate: string | null;
}

export type TaskInput = Omit<Task, 'id'>;

export const TITLE_REQUIRED = 'Title is required.';
export const NOT_AN_OBJECT = 'Request body must be a JSON object.';
export const WRONG_TYPE = 'title, description and dueDate must be strings.';

const FIELDS = ['title', 'description', 'dueDate'] as const;

/** A task to create, or the text of the 400 that refuses it. */
export type Checked = { task: TaskInput } | { refused: string };

/**
 * Known fields only (others are dropped); each a string or null when present. A title of nothing but
 * white space counts as missing: it would show as nothing.
 */
export function checkTask(body: unknown): Checked {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { refused: NOT_AN_OBJECT };
  const fields: Partial<Record<(typeof FIELDS)[number], string>> = {};
  for (const field of FIELDS) {
    const value = (body as Record<string, unknown>)[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') return { refused: WRONG_TYPE };
    fields[field] = value;
  }
  if (!fields.title?.trim()) return { refused: TITLE_REQUIRED };
  return {
    task: { title: fields.title, description: fields.description ?? null, dueDate: fields.dueDate ?? null },
  };
}

/**
 * The Create form: an empty field means "not given" (ASP.NET's model binding turns empty form values
 * into null the same way), so an empty description is stored as null.
 */
export function checkForm(form: unknown): Checked {
  if (typeof form !== 'object' || form === null) return { refused: TITLE_REQUIRED };
  const values = form as Record<string, unknown>;
  const field = (name: string) => (values[name] === '' ? undefined : values[name]);
  return checkTask({ title: field('title'), description: field('description'), dueDate: field('dueDate') });
}

export interface TaskStore {
  list(): Promise<Task[]>;
  /** Stores the task under a new GUID id and returns it. */
  add(input: TaskInput): Promise<Task>;
}

/** Variant A: the tasks live in this process and are lost on restart, as the spec says. */
export function memoryStore(): TaskStore {
  const tasks: Task[] = [];
  return {
    list: async () => [...tasks],
    async add(input) {
      const task = { id: randomUUID(), ...input };
      tasks.push(task);
      return task;
    },
  };
}
