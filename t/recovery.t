#!/usr/bin/perl

# Recovery under continuous load (two background clients, fail open):
# SCRIPT FLUSH, FLUSHALL, CLIENT KILL TYPE normal (the module's connection,
# named nginx-redis-ratelimit), DEBUG SLEEP 2 and a Redis restart. During
# each event every request is answered 200 within timeout (100 ms) + 300
# ms; SCRIPT FLUSH and FLUSHALL cost no request its decision (PASSED
# throughout); after the others, limiting from Redis (PASSED) resumes for
# good within 1.5 s of Redis answering again (the measured times are in
# the test names).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis(args => ['--enable-debug-command', 'yes']);

my $n = $t->start_nginx(<<'EOF2');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=100ms;
    redis_ratelimit_zone $arg_key zone=rc rate=100000000r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=rc;
    }
}
EOF2

my $TIMEOUT = 0.1;
my $MARGIN = 0.3;
my $RESUME_MAX = 1.5;

my $port = $n->port;
my $dir = $t->testdir;
my @workers = $n->worker_pids;

sub module_clients {
    return grep { /name=nginx-redis-ratelimit/ } $t->redis('CLIENT', 'LIST');
}

sub client_ids { map { /\bid=(\d+)/ ? $1 : () } module_clients() }

# two clients in a loop; each request: "start end status x-rl-status"
my @loaders;
for my $c (1 .. 2) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open my $out, '>', "$dir/rec-$c.txt" or POSIX::_exit(1);
        $out->autoflush(1);
        my $i = 0;
        while (!-e "$dir/rec-stop") {
            my $start = time;
            my $r = RRL::Test::http($port, 'GET', "/?key=l$c-" . ($i++ % 50),
                timeout => 10);
            printf $out "%.4f %.4f %s %s\n", $start, time,
                $r->{status} // 'none', $r->{h}{'x-rl-status'} // 'none';
            sleep 0.003;
        }
        POSIX::_exit(0);
    }
    push @loaders, $pid;
}

my @events;    # [name, start, end (Redis answers again), kind]

sub event {
    my ($name, $kind, $code) = @_;
    sleep 1.2;    # a quiet stretch before: its end, the last resumption
    my $start = time;
    $code->();
    push @events, [$name, $start, time, $kind];
}

my @ids = client_ids();
is(scalar @ids, 1, 'one module connection, named nginx-redis-ratelimit');

event('SCRIPT FLUSH', 'keep', sub { $t->redis('SCRIPT', 'FLUSH') });
event('FLUSHALL', 'keep', sub { $t->redis('FLUSHALL') });
event('CLIENT KILL TYPE normal', 'resume', sub {
    $t->redis('CLIENT', 'KILL', 'TYPE', 'normal');
});
sleep 0.3;
my @ids2 = client_ids();
event('DEBUG SLEEP 2', 'resume', sub { $t->redis('DEBUG', 'SLEEP', '2') });
event('restart', 'resume', sub {
    $t->stop_redis;
    sleep 0.3;
    $t->start_redis;    # returns once Redis answers PING
});
sleep 1.5;

open my $fh, '>', "$dir/rec-stop"; close $fh;
waitpid($_, 0) for @loaders;

my @req;    # [start, end, status, rl]
for my $c (1 .. 2) {
    open my $in, '<', "$dir/rec-$c.txt" or next;
    push @req, map { [split] } <$in>;
}
@req = sort { $a->[1] <=> $b->[1] } @req;

cmp_ok(scalar @req, '>', 500, scalar(@req) . ' requests in the background');

ok(@ids2 == 1 && $ids2[0] != $ids[0],
    "CLIENT KILL: the module connection was replaced (id @ids -> @ids2)");

my @bad = grep { $_->[2] ne '200' } @req;
is(scalar @bad, 0, 'every request answered 200 (no 5xx, none dropped)')
    or diag(join "\n", map { "@$_" } @bad[0 .. ($#bad < 9 ? $#bad : 9)]);

my @slow = grep { $_->[1] - $_->[0] >= $TIMEOUT + $MARGIN } @req;
is(scalar @slow, 0, 'every request answered within timeout + 300 ms')
    or diag(join "\n", map { sprintf '%.3f s: %s %s', $_->[1] - $_->[0], @$_[2, 3] } @slow);

for my $i (0 .. $#events) {
    my ($name, $start, $end, $kind) = @{ $events[$i] };
    my $next = $i < $#events ? $events[$i + 1][1] : $req[-1][1];

    # requests answered during the event
    my @during = grep { $_->[1] >= $start && $_->[0] <= $end } @req;
    my $slowest = 0;
    for (@during) { my $d = $_->[1] - $_->[0]; $slowest = $d if $d > $slowest }
    my %out;
    $out{ $_->[3] }++ for @during;
    note(sprintf '%s: %.2f s long, %d requests during it (%s), slowest %.3f s',
        $name, $end - $start, scalar @during,
        join(', ', map { "$_ x$out{$_}" } sort keys %out), $slowest);

    my @after = grep { $_->[1] >= $start && $_->[1] < $next } @req;

    if ($kind eq 'keep') {
        my @lost = grep { $_->[3] ne 'PASSED' } @after;
        is(scalar @lost, 0, "$name: every request PASSED throughout ("
            . scalar(@after) . ')');
        next;
    }

    # resumed: the first PASSED after the last failure (PASSED from then on)
    my ($last_fail) = reverse grep { $_->[3] ne 'PASSED' } @after;
    my $from = $last_fail ? $last_fail->[1] : $end;
    my ($first) = grep { $_->[1] >= $from && $_->[3] eq 'PASSED' } @after;
    my $resume = $first ? $first->[1] - $end : undef;
    $resume = 0 if defined $resume && $resume < 0;
    my $failed = grep { $_->[3] ne 'PASSED' } @after;
    ok(defined $resume && $resume <= $RESUME_MAX, "$name: limiting resumed "
        . (defined $resume ? sprintf('%.3f s', $resume) : 'never')
        . " after Redis answered again (<= $RESUME_MAX), for good; "
        . "$failed requests failed open");
}

is_deeply([$n->worker_pids], \@workers, "worker pids unchanged (@workers)");
my @crash = $n->grep_log(qr/\[(alert|crit|emerg)\]|exited on signal/);
is_deeply(\@crash, [], 'no alert, crit or crash in error.log');

$t->check_error_logs;
$t->done_testing;
