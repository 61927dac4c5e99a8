/** Deploy a bundle, watch the versions (timeline), roll back / stop / redeploy, rotate the client secret. */
import { Badge, Button, Card, FileInput, Group, NumberInput, Stack, Text, Timeline, Title } from '@mantine/core';
import { useEffect, useState } from 'react';
import { all, client } from '../../api';
import { ProblemAlert, Section, fmtDate, useAction, useLoad } from '../../ui';

const STATUS_COLOR: Record<string, string> = { active: 'green', failed: 'red', preparing: 'blue' };

export function DeploymentsTab({
  agentId,
  onSecret,
}: {
  agentId: string;
  onSecret(s: { id: string; value: string }): void;
}) {
  const deployments = useLoad(() => all(client.deployments.list(agentId, { limit: 50 }), 50), [agentId]);
  const [file, setFile] = useState<File | null>(null);
  const [grace, setGrace] = useState<number | string>(3600);
  const { error, act } = useAction();
  const busy = deployments.data?.some((d) => d.status === 'preparing');
  useEffect(() => {
    if (!busy) return;
    const t = setInterval(deployments.reload, 1000);
    return () => clearInterval(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [busy]);
  const op = (fn: () => Promise<unknown>) =>
    act(async () => {
      await fn();
      deployments.reload();
    });

  return (
    <Stack>
      <Card withBorder>
        <Stack>
          <Title order={3}>Deploy</Title>
          <FileInput
            label="Bundle (.tar.gz with index.js / index.mjs)"
            value={file}
            onChange={setFile}
            accept=".tgz,.gz,application/gzip"
            clearable
            clearButtonProps={{ 'aria-label': 'Clear the bundle' }}
          />
          <Group>
            <Button
              disabled={!file}
              onClick={() =>
                void op(() => client.deployments.deploy(agentId, { artifact: file!, filename: file!.name }))
              }
            >
              Deploy
            </Button>
            <Button variant="light" onClick={() => void op(() => client.deployments.rollback(agentId))}>
              Roll back
            </Button>
            <Button variant="light" onClick={() => void op(() => client.deployments.stop(agentId))}>
              Stop
            </Button>
            <Button variant="light" onClick={() => void op(() => client.deployments.redeploy(agentId))}>
              Redeploy
            </Button>
          </Group>
          <Group align="end">
            <NumberInput
              label="Grace period for the old secret (s)"
              value={grace}
              onChange={setGrace}
              min={0}
              max={86400}
            />
            <Button
              variant="default"
              onClick={() =>
                void act(async () => {
                  const a = await client.agents.rotateSecret(agentId, { grace_period_seconds: Number(grace) });
                  onSecret({ id: a.client_id, value: a.client_secret });
                })
              }
            >
              Rotate secret
            </Button>
          </Group>
          <ProblemAlert error={error} />
        </Stack>
      </Card>
      <Title order={3}>Deployments</Title>
      <Section state={deployments} empty={(d) => d.length === 0} emptyText="Not deployed yet: upload a bundle above.">
        {(d) => (
          <Timeline active={-1} bulletSize={18}>
            {d.map((x) => (
              <Timeline.Item key={x.id} title={`v${x.version}`}>
                <Group gap="xs">
                  <Badge color={STATUS_COLOR[x.status] ?? 'gray'} data-testid={`deployment-v${x.version}`}>
                    {x.status}
                  </Badge>
                  <Text size="xs" c="dimmed">
                    {fmtDate(x.created_at)}
                    {x.activated_at
                      ? ` · ${x.status === 'active' ? 'active since' : 'last activated'} ${fmtDate(x.activated_at)}`
                      : ''}
                  </Text>
                </Group>
                {x.failure_reason ? (
                  <Text size="xs" c="red">
                    {x.failure_reason}
                  </Text>
                ) : null}
              </Timeline.Item>
            ))}
          </Timeline>
        )}
      </Section>
    </Stack>
  );
}
