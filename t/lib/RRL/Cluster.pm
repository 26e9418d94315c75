package RRL::Cluster;

# A real Redis Cluster for end-to-end tests, inside an RRL::Test's
# directory: N primaries with R replicas each (3 + 3 by default), on
# loopback ports chosen free together with their cluster bus port
# (port + 10000), no persistence, a small cluster-node-timeout so that
# failovers are quick. Created with `redis-cli --cluster create`; new()
# returns once every node says cluster_state:ok, every node shows the same
# slot map and every replica's link to its primary is up.
#
#   my $c = RRL::Cluster->new($t, node_timeout => 1000,
#       acl => ['rrl', 'secret']);        # optional ACL user on every node
#   $c->seeds;                  # "127.0.0.1:p1 127.0.0.1:p2 127.0.0.1:p3"
#   $c->primaries;              # ports of the primaries, in slot order
#   $c->replicas_of($primary);  # ports of its replicas
#   $c->slot_owner($slot);      # port of the primary serving a slot
#   RRL::Cluster::owner_in($c->slot_map, $slot);  # the same, in a map kept
#   RRL::Cluster::keyslot($k);  # CRC16 slot, hash tags as Redis does
#                               # (the slot functions: RRL::Cluster::Slots)
#   RRL::Cluster::rrl_slot($zone, $key);       # slot of a limit's key
#   $c->key_on($primary, $zone, $prefix);      # a client key served there
#   RRL::Cluster::keys_in_slot($slot, $n, $zone);  # n client keys, one slot
#   $c->migrate_slot($slot, $to_port, batch => 1, pause => 0.05);
#   $c->reshard_cli($n, $from, $to);            # redis-cli --cluster reshard
#   $c->failover($replica);     # CLUSTER FAILOVER, waits for the switch
#   $c->kill_node($port); $c->wait_promoted($replica, 10);
#                               # (the changes: RRL::Cluster::Changes;
#                               # the topology: RRL::Cluster::Topology)
#   $c->cli($port, @command);   # redis-cli to one node (as the ACL user)
#   $c->module_clients($port), $c->errorstats($port), $c->reset_stats
#   $c->commandstats($port), $c->fw_count($port, $key, $window)
#   $c->probe_uris('key');      # /probe/?key=..., a key on each primary
#   $c->window_left(3600, 30);  # 30 s left in this hour, on its clock
#
# With tls => $cert (RRL::Tls::cert), every node serves TLS on its port
# (its cluster bus and replication too: tls-cluster, tls-replication) and
# plain TCP on another ($c->plain_port($port)); redis-cli speaks TLS.
#
# Every redis-server is stopped when the test file ends, dies or is
# interrupted (RRL::Test's cleanup and END; each server also gets
# PR_SET_PDEATHSIG, so even a killed test leaves none behind).

use strict;
use warnings;

use Carp qw(croak);
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Tls;
use RRL::Process qw(spawn reap stop_pid);
use RRL::Cluster::Slots qw(crc16 keyslot rrl_key rrl_slot keys_in_slot
    owner_in);
use RRL::Cluster::Topology;
use RRL::Cluster::Changes;

# the topology's methods (primaries, slot_map, wait_ok...) and the
# changes' (migrate_slot, failover, kill_node...)
our @ISA = qw(RRL::Cluster::Topology RRL::Cluster::Changes);

my @clusters;    # for END

# a port P, with P + 10000 (its cluster bus) free too, under the ephemeral
# range so that no outgoing connection takes it: 20000 .. 22767 (bus
# 30000 .. 32767), away from the usual fixed test ports (7000s, 17000s)
sub free_cluster_port {
    my ($taken) = @_;
    for (1 .. 1000) {
        my $p = 20000 + int rand 2768;
        next if $taken->{$p} || $taken->{$p + 10000} || $taken->{$p - 10000};
        my @s = map { IO::Socket::INET->new(LocalAddr => '127.0.0.1',
            LocalPort => $_, Proto => 'tcp', Listen => 1, ReuseAddr => 1) }
            $p, $p + 10000;
        my $ok = $s[0] && $s[1];
        close $_ for grep { $_ } @s;
        # and no other test file's (RRL::Test::claim_port)
        if ($ok && RRL::Test::claim_port($p)
                && RRL::Test::claim_port($p + 10000)) {
            $taken->{$p} = $taken->{$p + 10000} = 1;
            return $p;
        }
    }
    croak 'no free cluster port';
}


############################################################################

# new($t, primaries => 3, replicas => 1, node_timeout => 1000,
#     acl => [user, password], full_coverage => 1, args => [...],
#     tls => $cert)

sub new {
    my ($class, $t, %o) = @_;

    my $self = bless {
        t => $t,
        dir => $t->testdir . '/cluster',
        nprimaries => $o{primaries} // 3,
        nreplicas => $o{replicas} // 1,
        node_timeout => $o{node_timeout} // 1000,
        acl => $o{acl},
        full_coverage => $o{full_coverage} // 1,
        args => $o{args} // [],
        tls => $o{tls},
        nodes => {},    # port => {port, pid, dir}
        owner => $$,
    }, $class;
    $t->register_servers($self, \@clusters);

    my $start = time;
    my $n = $self->{nprimaries} * (1 + $self->{nreplicas});

    for my $attempt (1 .. 3) {
        my %taken;
        my @ports = map { free_cluster_port(\%taken) } 1 .. $n;
        my $ok = eval {
            $self->start_node($_) for @ports;
            1;
        };
        last if $ok;
        my $err = $@;
        $self->stop;
        $self->{nodes} = {};
        croak $err if $attempt == 3 || $err !~ /in use|did not answer/i;
    }

    $self->create;
    $self->{started_in} = time - $start;

    return $self;
}

sub start_node {
    my ($self, $port) = @_;

    my $dir = "$self->{dir}/$port";
    mkdir $dir;
    chmod 0755, $dir;

    my $plain = $self->{tls} ? RRL::Test::free_port() : $port;
    my @cmd = (RRL::Test::redis_server_binary(),
        '--port', $plain,
        ($self->{tls} ? (RRL::Tls::server_args($self->{tls}, $port),
            '--tls-cluster', 'yes', '--tls-replication', 'yes') : ()),
        '--bind', '127.0.0.1',
        '--cluster-enabled', 'yes',
        '--cluster-config-file', "$dir/nodes.conf",
        '--cluster-node-timeout', $self->{node_timeout},
        '--cluster-replica-validity-factor', '0',
        '--cluster-allow-replica-migration', 'no',
        '--cluster-require-full-coverage',
        ($self->{full_coverage} ? 'yes' : 'no'),
        '--save', '',
        '--appendonly', 'no',
        '--repl-diskless-sync', 'yes',
        '--repl-diskless-sync-delay', '0',
        # replicas show in CLUSTER SLOTS once they have an offset: a ping
        # a second gives them one at once (the default is every 10 s)
        '--repl-ping-replica-period', '1',
        '--dir', $dir,
        '--daemonize', 'no',
        '--logfile', "$dir/redis.log",
        ($self->{acl} ? ('--masteruser', $self->{acl}[0],
                         '--masterauth', $self->{acl}[1]) : ()),
        @{ $self->{args} });

    my $pid = spawn(\@cmd, $dir);
    $self->{nodes}{$port} = { port => $port, pid => $pid, dir => $dir,
        plain => $plain };

    my $deadline = time + 10;
    while (time < $deadline) {
        if (waitpid($pid, WNOHANG) == $pid) {
            delete $self->{nodes}{$port};
            croak "redis-server on $port exited at start: "
                . RRL::Test::read_file("$dir/redis.log")
                . RRL::Test::read_file("$dir/stdout");
        }
        # the default user, before any ACL is set
        my $pong = $self->raw_cli($port, [], 'PING');
        if ($pong eq 'PONG') {
            # ours, not another test's that took the port first
            my ($owner) = $self->raw_cli($port, [], 'INFO', 'server')
                =~ /process_id:(\d+)/;
            if (($owner // 0) != $pid) {
                stop_pid($pid);
                delete $self->{nodes}{$port};
                croak "port $port in use by another redis-server";
            }
            if ($self->{acl}) {
                my ($u, $p) = @{ $self->{acl} };
                my $r = $self->raw_cli($port, [], 'ACL', 'SETUSER', $u, 'on',
                    ">$p", '~*', '&*', '+@all');
                croak "ACL SETUSER on $port: $r" unless $r eq 'OK';
            }
            return $port;
        }
        sleep 0.02;
    }
    croak "redis-server did not answer PING on port $port";
}

sub create {
    my ($self) = @_;

    my @ports = sort { $a <=> $b } keys %{ $self->{nodes} };
    my $out = $self->cli_out(['--cluster', 'create',
        (map { "127.0.0.1:$_" } @ports),
        '--cluster-replicas', $self->{nreplicas}, '--cluster-yes']);
    croak "redis-cli --cluster create failed:\n$out"
        unless $out =~ /All 16384 slots covered/;

    $self->wait_ok(20) or croak "cluster not ready in 20 s:\n"
        . join("\n", map { "$_: " . join(' ', $self->cli($_, 'CLUSTER', 'INFO')) }
            $self->live_ports);

    return $self;
}

sub stop {
    my ($self) = @_;
    return unless $self->{owner} == $$;
    stop_pid($_->{pid}) for values %{ $self->{nodes} };
    $_->{pid} = undef for values %{ $self->{nodes} };
}

END {
    local $?;
    $_->stop for grep { defined } @clusters;
}

# interrupted tests still run END (and so stop the servers)
$SIG{INT} //= sub { exit 130 };
$SIG{TERM} //= sub { exit 143 };


############################################################################
# redis-cli

sub auth_args {
    my ($self) = @_;
    return () unless $self->{acl};
    return ('--user', $self->{acl}[0], '--pass', $self->{acl}[1],
        '--no-auth-warning');
}

sub tls_args {
    my ($self) = @_;
    return $self->{tls} ? RRL::Tls::cli_args($self->{tls}) : ();
}

sub raw_cli {
    my ($self, $port, $auth, @args) = @_;
    return RRL::Test::run_command(RRL::Test::redis_cli_binary(),
        '-h', '127.0.0.1', '-p', $port, $self->tls_args,
        @$auth, '--raw', @args);
}

# cli($port, @command): one command to one node (no redirection); the
# output in scalar context, its lines in list context
sub cli {
    my ($self, $port, @args) = @_;
    return $self->raw_cli($port, [$self->auth_args], @args);
}

# cli_out([redis-cli arguments]): redis-cli with the ACL user if any; its
# output (trailing newline removed), $? its exit status
sub cli_out {
    my ($self, $args) = @_;
    return scalar RRL::Test::run_command(RRL::Test::redis_cli_binary(),
        $self->tls_args, $self->auth_args, @$args);
}

sub cli_ok {
    my ($self, $port, @args) = @_;
    my $r = $self->cli($port, @args);
    croak "node $port: @args: $r" unless $r eq 'OK';
    return $r;
}


############################################################################
# keys

# a client key "$prefix<i>" whose limit key in $zone is served by $primary
sub key_on {
    my ($self, $primary, $zone, $prefix, $skip) = @_;
    my @ranges = $self->slots_of($primary);
    $skip //= 0;
    for (my $i = 0; ; $i++) {
        my $s = rrl_slot($zone, "$prefix$i");
        next unless grep { $s >= $_->[0] && $s <= $_->[1] } @ranges;
        return "$prefix$i" unless $skip--;
    }
}

# probe_uris($arg): "/probe/?$arg=KEY" for each primary, KEY a key of
# zone "probe" served there: a location /probe/ limited by that zone on
# $arg_$arg answers PASSED from each once limiting works (the cluster tests'
# RRL::Load::wait_status)
sub probe_uris {
    my ($self, $arg) = @_;
    return map { "/probe/?$arg=" . $self->key_on($_, 'probe', 'p') }
        $self->primaries;
}

# window_left($period, $seconds): makes sure at least $seconds are left in
# this fixed window of $period seconds, on the cluster's clock (its first
# primary's TIME), sleeping into the next window if needed; returns the
# clock's seconds then
sub window_left {
    my ($self, $period, $seconds) = @_;
    my $primary = ($self->primaries)[0];
    my ($now) = $self->cli($primary, 'TIME');
    return $now unless $period - $now % $period < $seconds;
    sleep($period - $now % $period + 0.1);
    ($now) = $self->cli($primary, 'TIME');
    return $now;
}

# the rrl:* keys stored on a node
sub rrl_keys {
    my ($self, $port, $pattern) = @_;
    return grep { length } $self->cli($port, '--scan', '--pattern',
        $pattern // 'rrl:*');
}

# module connections of a node (CLIENT LIST lines named nginx-redis-ratelimit)
sub module_clients {
    my ($self, $port) = @_;
    return grep { /\bname=nginx-redis-ratelimit\b/ }
        $self->cli($port, 'CLIENT', 'LIST');
}

# INFO errorstats as {MOVED => n, ASK => n, ...}
sub errorstats {
    my ($self, $port) = @_;
    my %e;
    for ($self->cli($port, 'INFO', 'errorstats')) {
        $e{$1} = $2 if /^errorstat_(\S+):count=(\d+)/;
    }
    return \%e;
}

# INFO commandstats calls as {'evalsha' => n, 'cluster|slots' => n, ...}
sub commandstats {
    my ($self, $port) = @_;
    return RRL::Test::Redis::commandstats_of(
        $self->cli($port, 'INFO', 'commandstats'));
}

# fw_count($port, $key, $window): RRL::Test's fw_count on a node
sub fw_count {
    my ($self, $port, $key, $window) = @_;
    return RRL::Test::Redis::fw_count_of(scalar $self->cli($port, 'GET', $key),
        $window);
}

sub reset_stats {
    my ($self) = @_;
    $self->cli_ok($_, 'CONFIG', 'RESETSTAT') for $self->live_ports;
}


1;
