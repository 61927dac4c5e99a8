import { Badge, Button, Card, Group, Slider, Stack, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useState } from 'react';
import { api } from '../api';
import { ProblemAlert, fmtDate } from '../ui';

interface Hit {
  id: string;
  content: string;
  source: string;
  similarity: number;
  score: number;
  created_at: string;
}

export function MemoryPage() {
  const [q, setQ] = useState('');
  const [threshold, setThreshold] = useState(0.3);
  const [hits, setHits] = useState<Hit[] | null>(null);
  const [content, setContent] = useState('');
  const [error, setError] = useState<unknown>(null);
  const search = async (t = threshold) => {
    setError(null);
    try {
      const r = await api<{ data: Hit[] }>('GET', `/memory/search?q=${encodeURIComponent(q)}&threshold=${t}&limit=20`);
      setHits(r.data);
    } catch (e) {
      setError(e);
    }
  };
  const add = async () => {
    setError(null);
    try {
      await api('POST', '/memory', { content });
      setContent('');
    } catch (e) {
      setError(e);
    }
  };
  return (
    <Stack>
      <Title order={2}>Memory</Title>
      <Card withBorder>
        <Stack>
          <Textarea label="Remember" value={content} onChange={(e) => setContent(e.currentTarget.value)} autosize minRows={2} />
          <Button onClick={() => void add()} disabled={!content.trim()}>
            Add memory
          </Button>
        </Stack>
      </Card>
      <Group align="end">
        <TextInput label="Search memory" value={q} onChange={(e) => setQ(e.currentTarget.value)} onKeyDown={(e) => e.key === 'Enter' && void search()} style={{ flex: 1 }} />
        <Button onClick={() => void search()} disabled={!q.trim()}>
          Search
        </Button>
      </Group>
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
                <Badge variant="light">similarity {h.similarity.toFixed(2)}</Badge>
                <Text size="xs" c="dimmed">
                  {h.source} · {fmtDate(h.created_at)}
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
