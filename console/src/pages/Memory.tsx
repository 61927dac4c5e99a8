/** Memory explorer: add and search memories (by kind, with a similarity threshold), and sessions' summaries and timelines. */
import {
  Badge,
  Button,
  Card,
  Group,
  SegmentedControl,
  Slider,
  Stack,
  Tabs,
  Text,
  TextInput,
  Textarea,
  Title,
} from '@mantine/core';
import { useState } from 'react';
import { client, type Result } from '../api';
import { ProblemAlert, fmtDate, useAction } from '../ui';
import { MemorySessions } from './MemorySessions';

type Hit = Result<'memory.search'>['data'][number];

export function MemoryPage() {
  return (
    <Stack>
      <Title order={2}>Memory</Title>
      <Tabs defaultValue="search" keepMounted={false}>
        <Tabs.List aria-label="Memory">
          <Tabs.Tab value="search">Search</Tabs.Tab>
          <Tabs.Tab value="sessions">Sessions</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="search" pt="md">
          <MemorySearch />
        </Tabs.Panel>
        <Tabs.Panel value="sessions" pt="md">
          <MemorySessions />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}

function MemorySearch() {
  const [q, setQ] = useState('');
  const [threshold, setThreshold] = useState(0);
  const [kind, setKind] = useState('note,summary');
  const [hits, setHits] = useState<Hit[] | null>(null);
  const [content, setContent] = useState('');
  const [added, setAdded] = useState<string | null>(null);
  const { error, act } = useAction();
  const search = (t = threshold, k = kind) =>
    act(async () => {
      setHits((await client.memory.search({ q, threshold: t, limit: 20, kind: k })).data);
    });
  const add = () =>
    act(async () => {
      const m = await client.memory.add({ content });
      setAdded(`Remembered (${m.id}).`);
      setContent('');
    });
  return (
    <Stack>
      <Card withBorder>
        <Stack>
          <Textarea
            label="Remember"
            value={content}
            onChange={(e) => setContent(e.currentTarget.value)}
            autosize
            minRows={2}
          />
          <Button onClick={() => void add()} disabled={!content.trim()}>
            Add memory
          </Button>
          {added ? (
            <Text size="sm" role="status">
              {added}
            </Text>
          ) : null}
        </Stack>
      </Card>
      <Group align="end">
        <TextInput
          label="Search memory"
          value={q}
          onChange={(e) => setQ(e.currentTarget.value)}
          onKeyDown={(e) => e.key === 'Enter' && q.trim() && void search()}
          style={{ flex: 1 }}
        />
        <Button onClick={() => void search()} disabled={!q.trim()}>
          Search
        </Button>
      </Group>
      <SegmentedControl
        aria-label="Kinds of memory"
        value={kind}
        onChange={(k) => {
          setKind(k);
          if (q.trim()) void search(threshold, k);
        }}
        data={[
          { value: 'note,summary', label: 'Notes & summaries' },
          { value: 'execution', label: 'Tool executions' },
          { value: 'all', label: 'All' },
        ]}
      />
      <Stack gap={4}>
        <Text size="sm" id="threshold-label">
          Similarity threshold: {threshold.toFixed(2)}
        </Text>
        <Slider
          min={0}
          max={1}
          step={0.05}
          value={threshold}
          onChange={setThreshold}
          onChangeEnd={(t) => q.trim() && void search(t)}
          thumbProps={{ 'aria-labelledby': 'threshold-label' } as never}
          data-testid="threshold"
        />
      </Stack>
      <ProblemAlert error={error} />
      {hits === null ? null : hits.length === 0 ? (
        <Text c="dimmed">No memory at this threshold.</Text>
      ) : (
        <Stack data-testid="memory-hits">
          {hits.map((h) => (
            <Card key={h.id} withBorder>
              <Group justify="space-between">
                <Group gap="xs">
                  <Badge variant="light" title="relevance, 0–1: the order of the results">
                    score {h.score.toFixed(2)}
                  </Badge>
                  <Text size="xs" c="dimmed">
                    similarity {h.similarity.toFixed(2)}
                  </Text>
                </Group>
                <Text size="xs" c="dimmed">
                  {h.kind} · {fmtDate(h.created_at)}
                </Text>
              </Group>
              <Text mt="xs">{h.content}</Text>
            </Card>
          ))}
        </Stack>
      )}
    </Stack>
  );
}
