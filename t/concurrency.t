#!/usr/bin/perl

# Concurrency: 8 forked clients fire 10 times the limit at one key, across
# two nginx instances of two workers each, all sharing one Redis. Exactly
# what the algorithm allows passes, whatever the interleaving: N per window
# (fixed_window, sliding_log, sliding_window on a fresh key), the bucket B
# (token_bucket; 20r/h refills one token per 180 s, nothing during the
# test), B + 1 (leaky_bucket and gcra, 1r/h burst=19). No 5xx, no Redis
# failure; every pass saw a distinct Remaining.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX ();
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my @algs = (
    # zone, parameters, key tag, what passes
    [fw => 'rate=20r/h algorithm=fixed_window', 'fw', 20],
    [sl => 'rate=20r/h algorithm=sliding_log', 'sl', 20],
    [sw => 'rate=20r/h algorithm=sliding_window', 'sw', 20],
    [tb => 'rate=20r/h algorithm=token_bucket', 'tb', 20],
    [tbb => 'rate=20r/h algorithm=token_bucket burst=15', 'tb', 15],
    [lb => 'rate=1r/h algorithm=leaky_bucket burst=19', 'lb', 20],
    [gcra => 'rate=1r/h algorithm=gcra burst=19', 'lb', 20],
);

# a Redis timeout long enough for a loaded machine: failures are not tested here
my $conf = "worker_processes 2;\n\nhttp {\n"
    . "    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=2s;\n";
$conf .= "    redis_ratelimit_zone \$arg_key zone=$_->[0] $_->[1];\n" for @algs;
$conf .= "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
    . "        add_header X-RL-Status \$redis_ratelimit_status always;\n"
    . "        add_header X-Pid \$pid always;\n";
$conf .= "        location /$_->[0]/ {\n            alias %%TESTDIR%%/html/;\n"
    . "            redis_ratelimit zone=$_->[0];\n        }\n" for @algs;
$conf .= "    }\n}\n";

my @n = ($t->start_nginx($conf), $t->start_nginx($conf));
my @ports = map { $_->port } @n;

is(scalar(grep { /name=nginx-redis-ratelimit/ } $t->redis('CLIENT', 'LIST')), 4,
    'four workers connected to the one Redis');

my $H = 3600;
my $wend = $t->wait_window($H, 15);
my $w = $wend / $H - 1;

my ($CLIENTS, $EACH) = (8, 25);    # 200 requests, 10 times the limit

# forks $CLIENTS clients; client c sends $EACH requests for $uri, to the
# instances in turn (starting with instance c % 2), all starting at once;
# returns every response as {status, remaining, limit, rl, pid, port}
sub fire {
    my ($uri) = @_;
    my $start = time + 0.2;
    my @kids;

    for my $c (0 .. $CLIENTS - 1) {
        pipe(my $rd, my $wr) or die "pipe: $!";
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            close $rd;
            sleep($start - time) if $start > time;
            my $out = '';
            for my $i (0 .. $EACH - 1) {
                my $port = $ports[($c + $i) % 2];
                my $r = RRL::Test::http($port, 'GET', $uri);
                $out .= join("\t", $r->{status} // 'none',
                    map { $r->{h}{$_} // '-' }
                    qw(x-ratelimit-remaining x-ratelimit-limit x-rl-status x-pid))
                    . "\t$port\n";
            }
            print $wr $out;
            close $wr;
            POSIX::_exit(0);
        }
        close $wr;
        push @kids, [$pid, $rd];
    }

    my @res;
    for my $k (@kids) {
        my ($pid, $rd) = @$k;
        local $/;
        my $out = <$rd> // '';
        close $rd;
        waitpid($pid, 0);
        for (split /\n/, $out) {
            my %r;
            @r{qw(status remaining limit rl pid port)} = split /\t/;
            push @res, \%r;
        }
    }
    return @res;
}

my %pids;

for my $alg (@algs) {
    my ($zone, $params, $tag, $allow) = @$alg;
    my $key = "k-$zone";
    my @r = fire("/$zone/?key=$key");
    my @pass = grep { $_->{status} eq '200' } @r;

    is(scalar @r, $CLIENTS * $EACH, "$zone: " . $CLIENTS * $EACH . ' responses');
    is(scalar(grep { $_->{status} !~ /^(200|429)$/ } @r), 0, "$zone: only 200 and 429, no 5xx")
        or diag(join ' ', map { $_->{status} } @r);
    is(scalar(grep { $_->{rl} =~ /^FAILED/ } @r), 0, "$zone: no Redis failure");
    is(scalar @pass, $allow, "$zone ($params): exactly $allow passed");
    is(scalar(grep { $_->{status} eq '429' } @r), $CLIENTS * $EACH - $allow,
        "$zone: the others rejected");
    is(join(' ', sort { $a <=> $b } map { $_->{remaining} } @pass),
        join(' ', 0 .. $allow - 1), "$zone: each pass saw a distinct Remaining");
    is(scalar(grep { $_->{limit} ne $allow } @r), 0, "$zone: X-RateLimit-Limit $allow");
    is(join(' ', map { my $p = $_; scalar grep { $_->{port} == $p } @r } @ports),
        join(' ', ($CLIENTS * $EACH / 2) x 2), "$zone: half of the requests to each instance");

    $pids{ $_->{port} }{ $_->{pid} }++ for @r;

    my $k = "rrl:{$zone:$key}:$tag";
    if ($tag eq 'fw') {
        is($t->redis('GET', $k), "$w:$allow", "$zone: Redis state");
    } elsif ($tag eq 'sl') {
        is($t->redis('ZCARD', $k), $allow, "$zone: $allow entries");
    } elsif ($tag eq 'sw') {
        is($t->redis('GET', $k), "$w:$allow:0", "$zone: Redis state");
    } elsif ($tag eq 'tb') {
        my ($tokens) = split /:/, $t->redis('GET', $k);
        ok(defined $tokens && $tokens >= 0 && $tokens < 0.1,
            "$zone: the bucket is empty (" . ($tokens // 'none') . ')');
    } else {
        my $ahead = $t->redis('GET', $k) / 1e6 - $t->redis_time;
        ok($ahead > $allow * $H - 10 && $ahead <= $allow * $H,
            sprintf("%s: the TAT is %d intervals ahead (%.1f s)", $zone, $allow, $ahead));
    }
}

ok(keys %{ $pids{ $ports[0] } } >= 1 && keys %{ $pids{ $ports[1] } } >= 1,
    'both instances served');
diag(join ', ', map { my $p = $_; "port $p: " . join(' ', map { "pid $_ x $pids{$p}{$_}" }
    sort keys %{ $pids{$p} }) } @ports) if $ENV{TEST_VERBOSE};

$t->done_testing;
