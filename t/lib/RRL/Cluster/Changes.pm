package RRL::Cluster::Changes;

# Changes to an RRL::Cluster, as its methods (a parent class of it): slots
# migrated (by the commands, or redis-cli --cluster reshard), failovers, a
# node killed, and the waits for their ends.

use strict;
use warnings;

use Carp qw(croak);
use Time::HiRes qw(time sleep);

use RRL::Process qw(reap);

# migrate_slot($slot, $to, batch => 100, pause => 0, before_keys => sub,
# after_keys => sub): moves a slot by hand, as redis-cli --cluster
# reshard does: SETSLOT IMPORTING on the target, MIGRATING on the source,
# MIGRATE the keys in batches (pause seconds after each), then SETSLOT
# NODE on the target, the source and every other primary; waits until
# every node agrees. Returns {from, to, keys (moved), seconds}.
sub migrate_slot {
    my ($self, $slot, $to, %o) = @_;
    my $start = time;
    my $from = $self->slot_owner($slot) // croak "slot $slot has no owner";
    croak "slot $slot is on $to already" if $from == $to;
    my ($from_id, $to_id) = map { $self->node_id($_) } $from, $to;
    my $batch = $o{batch} // 100;

    $self->cli_ok($to, 'CLUSTER', 'SETSLOT', $slot, 'IMPORTING', $from_id);
    $self->cli_ok($from, 'CLUSTER', 'SETSLOT', $slot, 'MIGRATING', $to_id);
    $o{before_keys}->() if $o{before_keys};

    my @auth = $self->{acl} ? ('AUTH2', @{ $self->{acl} }) : ();
    my $moved = 0;
    while (1) {
        my @keys = grep { length }
            $self->cli($from, 'CLUSTER', 'GETKEYSINSLOT', $slot, $batch);
        last unless @keys;
        my $r = $self->cli($from, 'MIGRATE', '127.0.0.1', $to, '', 0, 5000,
            @auth, 'KEYS', @keys);
        croak "MIGRATE of slot $slot ($from -> $to): $r"
            unless $r eq 'OK' || $r eq 'NOKEY';
        $moved += @keys;
        sleep $o{pause} if $o{pause};
    }
    $o{after_keys}->() if $o{after_keys};

    my @others = grep { $_ != $to && $_ != $from } $self->primaries;
    $self->cli_ok($_, 'CLUSTER', 'SETSLOT', $slot, 'NODE', $to_id)
        for $to, $from, @others;

    my $deadline = time + 10;
    while (time < $deadline) {
        last unless grep { ($self->slot_owner($slot, $_) // 0) != $to }
            $self->live_ports;
        sleep 0.02;
    }
    croak "slot $slot: nodes do not agree that $to serves it"
        if grep { ($self->slot_owner($slot, $_) // 0) != $to } $self->live_ports;

    return { from => $from, to => $to, keys => $moved,
        seconds => time - $start };
}

# reshard_cli($n, $from, $to): redis-cli --cluster reshard of $n slots
sub reshard_cli {
    my ($self, $n, $from, $to) = @_;
    my $out = $self->cli_out(['--cluster', 'reshard', "127.0.0.1:$from",
        '--cluster-from', $self->node_id($from),
        '--cluster-to', $self->node_id($to),
        '--cluster-slots', $n, '--cluster-yes']);
    croak "redis-cli --cluster reshard failed:\n$out" if $?;
    return $out;
}

sub role {
    my ($self, $port) = @_;
    my @r = $self->cli($port, 'ROLE');
    return $r[0] // '';
}

# failover($replica, $mode): CLUSTER FAILOVER [FORCE|TAKEOVER] on a
# replica; waits until it is a primary and every live node agrees on the
# slot map. Returns the seconds until the replica said it is a primary.
sub failover {
    my ($self, $replica, $mode, $timeout) = @_;
    my $start = time;
    $self->cli_ok($replica, 'CLUSTER', 'FAILOVER', $mode ? ($mode) : ());
    my $promoted = $self->wait_role($replica, 'master', $timeout // 10);
    croak "replica $replica not promoted" unless defined $promoted;
    $self->wait_ok(10, replicas => 0) or croak 'cluster not ok after failover';
    return $promoted - $start;
}

# wait_role($port, $role, $timeout): the time it took that role, or undef
sub wait_role {
    my ($self, $port, $role, $timeout) = @_;
    my $deadline = time + ($timeout // 10);
    while (time < $deadline) {
        return time if $self->role($port) eq $role;
        sleep 0.01;
    }
    return undef;
}

# kill_node($port): SIGKILL; returns the time of the kill
sub kill_node {
    my ($self, $port) = @_;
    my $pid = $self->{nodes}{$port}{pid} or croak "node $port not running";
    kill 'KILL', $pid;
    my $t = time;
    reap($pid, 5);
    $self->{nodes}{$port}{pid} = undef;
    return $t;
}

# wait_promoted($replica, $timeout): the time the replica became a
# primary (polled every 10 ms), or undef
sub wait_promoted {
    my ($self, $replica, $timeout) = @_;
    return $self->wait_role($replica, 'master', $timeout);
}

1;
