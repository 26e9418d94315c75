#!/usr/bin/perl

# MOVED and ASK naming a hostname (Redis 7 with cluster-announce-hostname
# and cluster-preferred-endpoint-type hostname) never make a worker
# resolve DNS: the request gets the fail mode, the slot map is refreshed
# and one line is logged; no connection to the name is ever made. Once
# the nodes announce addresses again, limiting resumes.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Cluster;
use RRL::Load;

my $t = RRL::Test->new;
my $c = RRL::Cluster->new($t, replicas => 0);

my @P = $c->primaries;

my $n = $t->start_nginx(<<"EOF2");
http {
    redis_ratelimit_server @{[ $c->seeds ]} cluster timeout=1s;
    redis_ratelimit_zone \$arg_key zone=hn rate=1000r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status \$redis_ratelimit_status always;
        redis_ratelimit zone=hn;
    }
}
EOF2

my @probe = map { '/?key=' . $c->key_on($_, 'hn', 'p') } @P;
ok(RRL::Load::wait_status($n, \@probe, 'PASSED', 10), 'limiting from the cluster');

# two keys of primary 1 in two slots: one will be moved, one asked for
my $moved_key = $c->key_on($P[0], 'hn', 'm');
my $moved_slot = RRL::Cluster::rrl_slot('hn', $moved_key);
my ($asked_key, $asked_slot);
for (my $i = 0; ; $i++) {
    $asked_key = $c->key_on($P[0], 'hn', 'a', $i);
    $asked_slot = RRL::Cluster::rrl_slot('hn', $asked_key);
    last if $asked_slot != $moved_slot;
}

is($n->get("/?key=$_")->{h}{'x-rl-status'}, 'PASSED', "$_: PASSED before")
    for $moved_key, $asked_key;

# every node announces "localhost", which resolves: a worker that
# resolved it would connect and pass the request

sub announce {
    my ($type) = @_;
    for my $p ($c->ports) {
        $c->cli($p, 'CONFIG', 'SET', 'cluster-announce-hostname', 'localhost');
        $c->cli($p, 'CONFIG', 'SET', 'cluster-preferred-endpoint-type', $type);
    }
    return if $type eq 'ip';

    # the hostnames travel by gossip: wait until primary 1 knows them all
    my $deadline = time + 10;
    sleep 0.1 while time < $deadline
        && (() = join(' ', $c->cli($P[0], 'CLUSTER', 'SLOTS')) =~ /localhost/g) < 3;
}

# MOVED, with the module's map still naming addresses
announce('hostname');
$c->migrate_slot($moved_slot, $P[1]);
my $r = $n->get("/?key=$moved_key");
is($r->{h}{'x-rl-status'}, 'FAILED_OPEN', 'MOVED to a hostname: the fail mode');
ok($n->wait_log(qr/MOVED from \S+ names "localhost", not a numeric address/, 1, 3),
    'MOVED to a hostname: logged');

# the refreshed map leaves out the slots of primaries named by hostname;
# addresses again: it routes the key to primary 2
announce('ip');
ok(RRL::Load::wait_status($n, ["/?key=$moved_key", "/?key=$asked_key"], 'PASSED', 15),
    'addresses announced again: limiting resumes');

# ASK: the key migrated, its slot not yet reassigned
sleep 1.1;    # the failures' log keeps one line a second
announce('hostname');
my $asked;
$c->migrate_slot($asked_slot, $P[1], after_keys => sub {
    $asked = $n->get("/?key=$asked_key");
});
is($asked->{h}{'x-rl-status'}, 'FAILED_OPEN', 'ASK to a hostname: the fail mode');
ok($n->wait_log(qr/ASK from \S+ names "localhost", not a numeric address/, 1, 3),
    'ASK to a hostname: logged');

announce('ip');
ok(RRL::Load::wait_status($n, ["/?key=$moved_key", "/?key=$asked_key"], 'PASSED', 15),
    'addresses announced again: limiting resumes');

is(scalar($n->grep_log(qr/localhost:\d+/)), 0, 'no connection to a hostname, ever');

$t->done_testing;
