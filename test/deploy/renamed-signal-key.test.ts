import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { databaseConfig, project, write } from '../helpers/project.js';
import { backend } from '../helpers/runtime.js';

const version = (term: string) => `name: approval
tasks:
  approve:
    kind: approve
    wait: { terms: { approved: ${term} } }
`;
const V1 = version('{ signal: approval, count: 2 }');
// the key is renamed: without renamed_from, the approvals already given would stop counting
const V2 = version('{ signal: approved, count: 2 }');
const V3 = version('{ signal: approved, renamed_from: approval, count: 2 }');

interface Status {
  workflow: { definition_hash: string; state: string };
  tasks: { name: string; state: string; pending_reason: string | null }[];
}

describe(`evidence never dropped silently: a renamed signal key (${backend})`, () => {
  it('with renamed_from a 1-of-2 quorum stays at 1 of 2 after upgrade; without, the dry run lists the loss and upgrade refuses unless --drop-evidence', async () => {
    const db = databaseConfig();
    const dir = project({ 'braid.config.yaml': `definitions: definitions\n${db.config}`, 'definitions/approval.yaml': V1 });
    const cli = (...args: string[]) => runCliInProcess(args, { cwd: dir, env: db.env });
    const status = async (id: string): Promise<Status> => JSON.parse((await cli('status', id, '--json')).stdout);
    const versionHash = async () => JSON.parse((await cli('versions', 'approval', '--json')).stdout)[0].hash as string;
    expect((await cli('register')).code).toBe(0);
    const v1 = await versionHash();
    for (const id of ['a1', 'a2', 'a3']) {
      expect((await cli('start', 'approval', '--id', id)).code).toBe(0);
      expect((await cli('signal', id, 'approval', '--payload', '{"by":"ada"}')).code).toBe(0);
    }
    expect((await status('a1')).tasks[0].pending_reason).toContain('approved 1/2');

    // the key renamed without renamed_from: plan warns, upgrade refuses, its dry run names what would be lost
    write(dir, 'definitions/approval.yaml', V2);
    const plan = await cli('plan');
    expect(plan.stdout).toContain('wait on signal key "approval", which this version no longer declares');
    expect(plan.stdout).toContain('renamed_from: approval');
    expect((await cli('register')).code).toBe(0);
    const v2 = await versionHash();
    const loss = '1 signal of key approval no longer counts for term approved of task approve';
    const dry = await cli('upgrade', 'approval', '--dry-run');
    expect(dry.code).toBe(1);
    for (const id of ['a1', 'a2', 'a3']) expect(dry.stdout).toContain(`  ${id}  ${v1.slice(0, 12)}  cannot move: ${loss} (renamed_from: OLD_KEY`);
    const refused = await cli('upgrade', 'approval', '--id', 'a3');
    expect(refused.code).toBe(1);
    expect((await status('a3')).workflow.definition_hash).toBe(v1);
    // --drop-evidence moves it anyway, and says what it dropped
    const dropped = await cli('upgrade', 'approval', '--id', 'a3', '--drop-evidence');
    expect(dropped.code).toBe(0);
    expect(dropped.stdout).toContain(`  a3  ${v1.slice(0, 12)}  moved (dropped: ${loss})`);
    expect((await status('a3')).tasks[0].pending_reason).toContain('approved 0/2');

    // with renamed_from: the approvals given under the old key keep counting, and senders may use either key
    write(dir, 'definitions/approval.yaml', V3);
    const renamedPlan = await cli('plan');
    expect(renamedPlan.stdout).not.toContain('no longer declares');
    expect((await cli('register')).code).toBe(0);
    const v3 = await versionHash();
    const moved = await cli('upgrade', 'approval', '--format', 'json');
    expect(moved.code).toBe(0);
    expect(JSON.parse(moved.stdout).results.map((r: { id: string; status: string; from: string }) => [r.id, r.status, r.from])).toEqual([
      ['a1', 'moved', v1],
      ['a2', 'moved', v1],
      ['a3', 'moved', v2],
    ]);
    for (const id of ['a1', 'a2']) {
      const s = await status(id);
      expect(s.workflow.definition_hash).toBe(v3);
      expect(s.tasks[0].pending_reason).toContain('approved 1/2');
    }
    expect((await cli('signal', 'a1', 'approved', '--payload', '{"by":"bob"}')).code).toBe(0);
    expect((await cli('signal', 'a2', 'approval', '--payload', '{"by":"bob"}')).code).toBe(0);
    for (const id of ['a1', 'a2']) expect((await status(id)).tasks[0].state).not.toBe('pending');
    // signals are facts: the one a3 got under the old key counts again once a version counts that key
    expect((await status('a3')).tasks[0].pending_reason).toContain('approved 1/2');
  }, 120_000);
});
