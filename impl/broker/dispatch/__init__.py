"""Subscription dispatchers, one per subscription type: which consumer gets an entry.

The subscription (impl/broker/subscription.py) owns reading, acknowledgements and
redelivery; a dispatcher only decides, entry by entry in position order, who takes it now.
"""

from __future__ import annotations

from impl.broker.dispatch.base import Dispatcher
from impl.broker.dispatch.key_shared import KeySharedDispatcher
from impl.broker.dispatch.shared import SharedDispatcher
from impl.broker.dispatch.single_active import ExclusiveDispatcher, FailoverDispatcher
from wire.pulsar_api_pb2 import CommandSubscribe

_BY_TYPE: dict[int, type[Dispatcher]] = {
    CommandSubscribe.Exclusive: ExclusiveDispatcher,
    CommandSubscribe.Failover: FailoverDispatcher,
    CommandSubscribe.Shared: SharedDispatcher,
    CommandSubscribe.Key_Shared: KeySharedDispatcher,
}


def dispatcher_for(sub_type: int) -> Dispatcher:
    return _BY_TYPE[sub_type]()


__all__ = ["Dispatcher", "dispatcher_for"]
