"""PIP-468 scalable topics, broker-independent core: the segment DAG (`layout`), the per-topic
controller that splits and merges it (`controller`), and the per-subscription consumer
assignment (`coordinator`). Segment topics are reached through `segment_topics.SegmentTopics`,
so the same controller drives managed ledgers in a broker and znodes in tests.
docs/scalable-topics.md is the reader's guide.
"""
