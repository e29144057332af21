"""The lease keeper's clock: the dispatcher sleeps until a renewal is due, so the keeper
must say when that is, and renew a lease then and not before."""

import time

from sparkpipes.catalog import Catalog
from sparkpipes.engine.scheduler.leasing import Keeper


def test_a_renewal_is_due_a_third_of_the_ttl_after_the_last(tmp_path):
    catalog = Catalog(f"sqlite:///{tmp_path / 'c.db'}")
    keeper = Keeper(catalog, lambda: 0.6, me="e1")
    assert 0.19 <= keeper.due_in_s() <= 0.2  # none held: one taken now is due then
    assert keeper.hold("p1")
    token = keeper.token("p1")
    keeper.renew_due()  # not due yet: the lease row is untouched
    assert keeper.due_in_s() > 0.1
    time.sleep(keeper.due_in_s())
    assert keeper.due_in_s() == 0.0
    keeper.renew_due()
    assert 0.15 < keeper.due_in_s() <= 0.2 and keeper.token("p1") == token
    # another engine cannot take it while it is renewed in time
    other = Keeper(catalog, lambda: 0.6, me="e2")
    for _ in range(3):
        time.sleep(keeper.due_in_s())
        keeper.renew_due()
    assert not other.hold("p1")
