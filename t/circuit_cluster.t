#!/usr/bin/perl

# Redis Cluster, a location with two limits whose keys are in two slots of
# one primary: the call has two parts on that node. After a stall of the
# primary under such traffic, limiting resumes within cooldown + timeout:
# the node's half-open probe is taken once for the call and both parts ride
# on it (the second part used to be refused, and the rollback cleared the
# probe of the first: no probe ever went out, FAILED_OPEN for good).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);

use RRL::Test;
use RRL::Cluster;
use RRL::Load;

my $t = RRL::Test->new;
my $c = RRL::Cluster->new($t, replicas => 0);
my @P = $c->primaries;

# client keys whose two limits' slots differ, both on primary 1
sub two_slots_on {
    my ($primary, $prefix, $skip) = @_;
    my @ranges = $c->slots_of($primary);
    my $on = sub {
        my $s = shift;
        return grep { $s >= $_->[0] && $s <= $_->[1] } @ranges;
    };
    for (my $i = 0; ; $i++) {
        my ($sa, $sb) = map { RRL::Cluster::rrl_slot($_, "$prefix$i") } qw(a b);
        next unless $sa != $sb && $on->($sa) && $on->($sb);
        return "$prefix$i" unless $skip--;
    }
}

my @keys = map { two_slots_on($P[0], 'k', $_) } 0 .. 19;

my $n = $t->start_nginx(<<"EOF2");
http {
    redis_ratelimit_server @{[ $c->seeds ]} cluster timeout=100ms
                           max_failures=3 cooldown=500ms;
    redis_ratelimit_zone \$arg_key zone=a rate=100000r/h algorithm=fixed_window;
    redis_ratelimit_zone \$arg_key zone=b rate=100000r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status \$redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=a;
            redis_ratelimit zone=b;
        }
    }
}
EOF2

ok(RRL::Load::wait_status($n, ["/?key=$keys[0]"], 'PASSED', 10),
    'two limits in two slots of one primary: PASSED');

# traffic on the keys while the primary stalls
my $load = RRL::Load->start($t, $n->port, [map { "/?key=$_" } @keys],
    interval => 0.01, rounds => 100000);
sleep 0.3;
kill 'STOP', $c->pid($P[0]);
ok($n->wait_log(qr/circuit open/, 1, 3), 'the stall opened the circuit');
sleep 0.3;
kill 'CONT', $c->pid($P[0]);
my $resumed = time;

my $took;
while (time - $resumed < 3) {
    if (($n->get("/?key=$keys[0]")->{h}{'x-rl-status'} // '') eq 'PASSED') {
        $took = time - $resumed;
        last;
    }
    sleep 0.02;
}
$load->stop;

ok(defined $took && $took < 0.5 + 0.1 + 0.3,
    'limiting resumes within cooldown + timeout'
    . (defined $took ? sprintf(' (%.2f s)', $took) : ' (never)'));
ok($n->wait_log(qr/answers again, circuit closed/, 1, 2), 'the circuit closed');

$t->done_testing;
