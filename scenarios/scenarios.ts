/**
 * The system's flows end to end, one short script each, against a target (contracts/target.ts).
 * Scenarios that read the function host's log or move the clock need what only the local stack offers
 * (`functionsLog`, `controlUrl` + `masterKey`) and are skipped elsewhere, naming the missing field.
 */
import { GatewayClient } from '../contracts/gateway-client.ts';
import { shown } from '../contracts/table.ts';
import {
  advanceClock,
  control,
  FEED_POLL_DELAY_MS,
  fetchTarget,
  type Need,
  type Target,
} from '../contracts/target.ts';
import { waitFor } from '../emulators/core/testing.ts';
import { readLogFile } from '../emulators/functions-host/logs.ts';
import { openPage, postForm } from '../system/web/form-client.ts';

export interface Scenario {
  name: string;
  description: string;
  needs: Need[];
  run(target: Target, step: (text: string) => void): Promise<void>;
}

const fn = (t: Target, path: string, query = '') =>
  `${t.baseUrl}${path}?${query ? `${query}&` : ''}code=${encodeURIComponent(t.functionKey ?? '')}`;

async function expectStatus(response: Response, status: number, what: string): Promise<string> {
  const body = await response.text();
  if (response.status !== status)
    throw new Error(`${what}: status ${response.status}, expected ${status}; body ${shown(body)}`);
  return body;
}

/**
 * Waits (bounded, only against a hang) for a function host log entry with exactly `message`. With
 * `viaFeed` (it comes through the change feed) on a target whose clock moves, the wait moves the clock past
 * the feed's poll delay rather than wait it out.
 */
function logLine(t: Target, functionName: string, message: string, viaFeed = false) {
  return waitFor(
    `${functionName} to log "${message}"`,
    () =>
      readLogFile(t.functionsLog ?? '').find(
        (entry) => entry.function === functionName && entry.message === message,
      ),
    undefined,
    viaFeed && t.controlUrl && t.masterKey ? () => advanceClock(t, FEED_POLL_DELAY_MS) : undefined,
  );
}

const unique = (what: string) => `${what} ${new Date().toISOString()}`;

/** Uploads one attachment; answers its getattachment URL. */
async function upload(t: Target, taskId: string, fileName: string, type: string): Promise<string> {
  const form = new FormData();
  form.set('taskId', taskId);
  form.set('file', new Blob(['scenario notes'], { type }), fileName);
  await expectStatus(
    await fetchTarget(fn(t, '/api/uploadattachment'), { method: 'POST', body: form }),
    200,
    'uploadattachment',
  );
  return fn(t, '/api/getattachment', `taskId=${taskId}&fileName=${fileName}`);
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'createtask-blob',
    description: 'POST /api/createtask → blob tasks/<Id>.json → ProcessTask logs its content',
    needs: ['baseUrl', 'functionKey', 'functionsLog'],
    async run(t, step) {
      const title = unique('scenario blob');
      const body = await expectStatus(
        await fetchTarget(fn(t, '/api/createtask'), {
          method: 'POST',
          body: JSON.stringify({ Title: title }),
        }),
        200,
        'createtask',
      );
      const task = JSON.parse(body) as { Id: string };
      step(`created task ${task.Id}`);
      await logLine(t, 'ProcessTask', `ProcessTask: tasks/${task.Id}.json: ${body}`);
      step('ProcessTask logged the blob');
    },
  },
  {
    name: 'managetask-notification',
    description:
      'POST /api/managetask → DocumentCreated on taskcreatedtopic → TaskCreatedNotification logs title and id',
    needs: ['baseUrl', 'functionKey', 'functionsLog'],
    async run(t, step) {
      const title = unique('scenario document');
      const body = await expectStatus(
        await fetchTarget(fn(t, '/api/managetask'), {
          method: 'POST',
          body: JSON.stringify({ Title: title }),
        }),
        200,
        'managetask',
      );
      const { id } = JSON.parse(body) as { id: string };
      step(`created document ${id}`);
      await logLine(
        t,
        'TaskCreatedNotification',
        `TaskCreatedNotification: task created: ${title} (id ${id})`,
        true,
      );
      step('TaskCreatedNotification logged it');
    },
  },
  {
    name: 'attachment-metadata',
    description:
      'POST /api/uploadattachment → GET /api/getattachment: TaskId metadata, content type, address',
    needs: ['baseUrl', 'functionKey'],
    async run(t, step) {
      const taskId = `scenario-${Date.now()}`;
      const address = await upload(t, taskId, 'notes.md', 'text/markdown');
      step(`uploaded ${taskId}/notes.md`);
      const metadata = JSON.parse(await expectStatus(await fetchTarget(address), 200, 'getattachment')) as {
        TaskId: string;
        ContentType: string;
        Uri: string;
      };
      if (metadata.TaskId !== taskId || metadata.ContentType !== 'text/markdown')
        throw new Error(`unexpected metadata ${JSON.stringify(metadata)}`);
      if (!metadata.Uri.endsWith(`/attachments/${taskId}/notes.md`)) throw new Error(`Uri ${metadata.Uri}`);
      step(`metadata: TaskId ${metadata.TaskId}, ${metadata.ContentType}, ${metadata.Uri}`);
    },
  },
  {
    name: 'web-create-taskevents',
    description: 'web app A Create → one message on taskevents → ProcessTaskEvents logs it',
    needs: ['webBaseUrl', 'functionsLog'],
    async run(t, step) {
      const url = t.webBaseUrl ?? '';
      const title = unique('scenario web');
      const page = await openPage(url);
      const created = await postForm(
        url,
        '/tasks',
        { title, description: '', dueDate: '', _csrf: page.token },
        page.cookie,
      );
      await expectStatus(created, 303, 'Create');
      const tasks = JSON.parse(await expectStatus(await fetchTarget(`${url}/api/tasks`), 200, 'list')) as {
        title: string;
      }[];
      const task = tasks.find((candidate) => candidate.title === title);
      if (!task) throw new Error('the created task is not listed');
      step(`created ${JSON.stringify(task)}`);
      await logLine(t, 'ProcessTaskEvents', `ProcessTaskEvents: message: ${JSON.stringify(task)}`);
      step('ProcessTaskEvents logged the message');
    },
  },
  {
    name: 'gateway-limit-rewrite',
    description:
      'through the gateway: 5 calls a minute to managetask, the 6th 429; /web/api/tasks served by the web app’s /api/tasks',
    needs: ['gatewayUrl', 'subscriptionKey', 'webBaseUrl', 'controlUrl', 'masterKey'],
    async run(t, step) {
      await advanceClock(t, 61_000);
      step('clock moved past the rate-limit window');
      const gateway = new GatewayClient(t.gatewayUrl ?? '', t.subscriptionKey);
      for (let call = 1; call <= 5; call++) {
        const answer = await gateway.createTask({ Title: `scenario call ${call}` });
        if (answer.status !== 200) throw new Error(`call ${call}: ${answer.status}`);
      }
      const limited = await gateway.createTask({ Title: 'one too many' });
      if (limited.status !== 429) throw new Error(`the 6th call answered ${limited.status}`);
      step(`6th call: 429 ${JSON.stringify(limited.body)}`);
      await advanceClock(t, 61_000);
      const title = unique('scenario rewrite');
      const created = await gateway.createWebTask({ title });
      if (created.status !== 200) throw new Error(`web create through the gateway: ${created.status}`);
      const direct = JSON.parse(
        await expectStatus(await fetchTarget(`${t.webBaseUrl}/api/tasks`), 200, 'list'),
      ) as {
        title: string;
      }[];
      if (!direct.some((task) => task.title === title)) throw new Error('the web app does not hold the task');
      step('the task created at /web/api/tasks is in the web app’s /api/tasks');
    },
  },
  {
    name: 'lifecycle-rule',
    description: 'ArchiveOldFiles: an attachment not modified for over a day (stack clock) is deleted',
    needs: ['baseUrl', 'functionKey', 'controlUrl', 'masterKey'],
    async run(t, step) {
      const address = await upload(t, `scenario-old-${Date.now()}`, 'old.txt', 'text/plain');
      await expectStatus(await fetchTarget(address), 200, 'getattachment before');
      await advanceClock(t, 2 * 86_400_000);
      step('clock moved 2 days');
      // Run after the daily run the clock's move made due (one run at a time), so the rule has been applied.
      const { deleted } = (await control(t, '/components/blob/runLifecycle', {})) as { deleted: string[] };
      step(
        `lifecycle run: ${deleted.length ? `deleted ${deleted.join(', ')}` : 'nothing left to delete (the daily run, due as the clock moved, ran first)'}`,
      );
      await expectStatus(await fetchTarget(address), 404, 'getattachment after the rule');
      step('the attachment is gone (404)');
    },
  },
  {
    name: 'key-renewal',
    description: 'renewing the function key: the old key is refused (401), the new one accepted',
    needs: ['baseUrl', 'functionKey', 'controlUrl', 'masterKey'],
    async run(t, step) {
      const withKey = (key: string) =>
        fetchTarget(`${t.baseUrl}/api/managetask?taskId=none`, { headers: { 'x-functions-key': key } });
      const old = t.functionKey ?? '';
      await expectStatus(await withKey(old), 404, 'with the current key');
      const renewed = (await control(t, '/components/functions/renewKey', { keyName: 'default' })) as {
        value: string;
      };
      step('renewed the default host key');
      try {
        await expectStatus(await withKey(old), 401, 'with the old key');
        await expectStatus(await withKey(renewed.value), 404, 'with the new key');
        step('old key 401, new key accepted');
      } finally {
        // Leave the target as found: its stack.json and other tools hold the old key.
        await control(t, '/components/functions/setKey', { keyName: 'default', keyValue: old });
      }
    },
  },
];
