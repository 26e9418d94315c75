// The primary behind Sentinel (rrl_primary_switch): the first answer, the
// same primary again, a failover.
#include <gtest/gtest.h>

#include "rrl_primary.h"

namespace {

int a, b;

TEST(Primary, FirstThenSameThenSwitched) {
    rrl_primary_t p = {nullptr};
    void* old = &b;
    EXPECT_EQ(rrl_primary_switch(&p, &a, &old), RRL_PRIMARY_FIRST);
    EXPECT_EQ(old, nullptr);
    EXPECT_EQ(p.node, &a);
    EXPECT_EQ(rrl_primary_switch(&p, &a, &old), RRL_PRIMARY_SAME);
    EXPECT_EQ(old, nullptr);
    EXPECT_EQ(rrl_primary_switch(&p, &b, &old), RRL_PRIMARY_SWITCHED);
    EXPECT_EQ(old, &a);
    EXPECT_EQ(p.node, &b);
    EXPECT_EQ(rrl_primary_switch(&p, &a, &old), RRL_PRIMARY_SWITCHED);
    EXPECT_EQ(old, &b);
}

}  // namespace
