#!/usr/bin/perl

# Two separate nginx instances (one of them with two workers) sharing one
# Redis enforce one global limit: sequential alternating requests, and
# concurrent ones (each worker pipelines its calls on one connection).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $conf = <<'EOF';
worker_processes %%WORKERS%%;

http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=global rate=10r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=slog rate=4r/h algorithm=sliding_log;
    redis_ratelimit_zone $arg_key zone=many rate=25r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=global;
        }
        location /slog/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=slog;
        }
        location /many/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=many;
        }
    }
}
EOF

(my $c1 = $conf) =~ s/%%WORKERS%%/2/;
(my $c2 = $conf) =~ s/%%WORKERS%%/1/;

my @n = ($t->start_nginx($c1), $t->start_nginx($c2));

is(scalar(grep { /name=nginx-redis-ratelimit/ } $t->redis('CLIENT', 'LIST')), 3,
    'three workers connected to the one Redis');

my $P = 3600;
my $wend = $t->wait_window($P, 10);

# fixed window, alternating between the instances

my (@status, @remaining, %passed_by);

for my $i (0 .. 29) {
    my $r = $n[$i % 2]->get('/?key=shared');
    push @status, $r->{status} // 'none';
    push @remaining, $r->{h}{'x-ratelimit-remaining'} // 'none';
    $passed_by{$i % 2}++ if ($r->{status} // 0) == 200;
    is($r->{h}{'x-ratelimit-reset'}, $wend, "request $i: same Reset everywhere")
        if $i == 0 || $i == 29;
}

is(scalar(grep { $_ eq 200 } @status), 10, 'exactly 10 of 30 passed in total');
is("@status[0 .. 9]", join(' ', (200) x 10), 'the first 10 passed');
is("@status[10 .. 29]", join(' ', (429) x 20), 'the 20 others were rejected');
is("@remaining[0 .. 9]", '9 8 7 6 5 4 3 2 1 0',
    'remaining counts down across both instances');
is("@remaining[10 .. 29]", join(' ', (0) x 20), 'remaining 0 when rejected');
is($passed_by{0}, 5, 'instance 1 passed 5');
is($passed_by{1}, 5, 'instance 2 passed 5');
is($t->redis('GET', 'rrl:{global:shared}:fw'), ($wend / $P - 1) . ':10',
    'Redis: one counter, 10');

# each instance asked Redis once; its deny cache (shared by its workers)
# answered the 9 others
for my $i (0 .. 1) {
    is(scalar($n[$i]->grep_log(qr/limiting requests by zone "global", key "shared"/)),
        1, "instance " . ($i + 1) . " logged 1 rejection from Redis");
    is(scalar($n[$i]->grep_log(qr/limiting requests by zone "global" \(cached\), key "shared"/)),
        9, "instance " . ($i + 1) . " logged 9 rejections from its cache");
}

# sliding log, alternating

@status = map { $n[$_ % 2]->get('/slog/?key=s')->{status} // 'none' } 0 .. 7;
is("@status", '200 200 200 200 429 429 429 429', 'sliding log: 4 of 8 passed');
is($t->redis('ZCARD', 'rrl:{slog:s}:sl'), 4, 'sliding log: 4 entries');

# concurrent: 30 requests on each instance sent before any reply is read

my @uris = map { '/many/?key=c' } 1 .. 30;
my @r;
{
    my @s0 = map { RRL::Test::http_send($n[0]->port, 'GET', $_) } @uris;
    my @s1 = map { RRL::Test::http_send($n[1]->port, 'GET', $_) } @uris;
    @r = map { RRL::Test::http_read($_) } grep { defined } @s0, @s1;
}

is(scalar @r, 60, 'concurrent: 60 responses');
is(scalar(grep { ($_->{status} // 0) == 200 } @r), 25, 'concurrent: exactly 25 passed');
is(scalar(grep { ($_->{status} // 0) == 429 } @r), 35, 'concurrent: 35 rejected');
is(scalar(grep { ($_->{h}{'x-rl-status'} // '') =~ /^FAILED/ } @r), 0,
    'concurrent: no Redis failure');
is(join(' ', sort { $a <=> $b } map { $_->{h}{'x-ratelimit-remaining'} }
        grep { ($_->{status} // 0) == 200 } @r),
    join(' ', 0 .. 24), 'concurrent: each pass saw a distinct remaining');
is($t->redis('GET', 'rrl:{many:c}:fw'), ($wend / $P - 1) . ':25',
    'concurrent: Redis counter 25');

$t->done_testing;
