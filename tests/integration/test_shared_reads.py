"""The reads many jobs share, against the real broker and Flink's reporters: one end-offsets request per round for
every job's topics, each job's total what its own request would say; a job's view closed takes its topics out; a
topic deleted under one job leaves the others their readings; one scrape of each reporter per round, the samples a
scrape of its own would give."""

from __future__ import annotations

import uuid

from chronos.jobs.loadgen import KafkaEventSink
from chronos.jobs.topic_offsets import BrokerEndOffsets, TopicEndOffsets
from chronos.jobs.topics import delete_topics, ensure_topics
from chronos.signals.shared_reads import SharedReads
from chronos.stack.state import StackState
from tests.support.clocks import Clock


def test_one_request_a_round_answers_every_jobs_topics(stack: StackState) -> None:
    tag = uuid.uuid4().hex[:6]
    topics = [f"shared-{tag}-{i}" for i in range(3)]
    ensure_topics(stack.bootstrap, topics, partitions=2)
    sink = {t: KafkaEventSink(stack.bootstrap, t) for t in topics}
    try:
        for n, topic in enumerate(topics):
            for _ in range(10 * (n + 1)):
                sink[topic].send(None, b"{}")
            sink[topic].flush()
        clock = Clock()
        broker = BrokerEndOffsets(stack.bootstrap, fresh_s=2.0, clock=clock)
        try:
            views = [broker.ends_of((topics[0],)), broker.ends_of((topics[1], topics[2])), broker.ends_of((topics[2],))]
            own = [TopicEndOffsets(stack.bootstrap, topics[0]), TopicEndOffsets(stack.bootstrap, topics[1], topics[2]),
                   TopicEndOffsets(stack.bootstrap, topics[2])]
            assert [v.total_end_offset() for v in views] == [o.total_end_offset() for o in own] == [10, 50, 30]
            assert broker.requests == 1, "three jobs, one request"
            clock.now = 2.5
            assert views[2].total_end_offset() == 30 and broker.requests == 2, "a new round, a new request"
            for o in own:
                o.close()
            views[0].close()
            clock.now = 5
            delete_topics(stack.bootstrap, [topics[1]])  # under the second job
            assert views[2].total_end_offset() == 30, "the third job keeps its reading"
        finally:
            broker.close()
    finally:
        for s in sink.values():
            s.close()
        delete_topics(stack.bootstrap, topics)


def test_one_scrape_of_each_reporter_a_round(stack: StackState) -> None:
    clock = Clock()
    reads = SharedReads(fresh_s=2.0, clock=clock)
    try:
        first = reads.scrape(stack.prometheus_urls)
        again = reads.scrape(stack.prometheus_urls)
        assert reads.scrapes == len(stack.prometheus_urls) and again == first
        clock.now = 2.5
        reads.scrape(stack.prometheus_urls)
        assert reads.scrapes == 2 * len(stack.prometheus_urls)
    finally:
        reads.close()
